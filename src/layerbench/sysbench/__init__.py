"""sysbench: command lines, the Lua report hook, parsing of its output, latency histograms, custom scripts."""

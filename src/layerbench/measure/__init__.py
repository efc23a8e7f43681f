"""What the machine did during a run: CPU, I/O, environment fingerprints, samplers."""

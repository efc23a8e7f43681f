"""The external backend: a server someone else runs, reached by address."""

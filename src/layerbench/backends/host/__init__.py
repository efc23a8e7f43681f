"""The host backend: a private server process on this machine or on an ssh: host."""

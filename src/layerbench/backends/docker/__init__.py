"""The Docker backend: a container of a local image, its network, storage and QoS preset, here or on an ssh: host."""

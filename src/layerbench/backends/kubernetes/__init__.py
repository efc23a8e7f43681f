"""The Kubernetes backend: a pod (or StatefulSet) by QoS class on any kubeconfig, sysbench as a Job."""

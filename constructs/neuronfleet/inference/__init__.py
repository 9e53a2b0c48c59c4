"""NeuronEndpoint, its serving containers and the endpoint failover."""

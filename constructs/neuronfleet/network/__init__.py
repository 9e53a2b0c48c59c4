"""FleetNetwork: the VPC, its subnets and endpoints."""

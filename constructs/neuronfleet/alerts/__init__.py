"""FleetAlerts (the fleet's SNS topic) and the announcement ledger every announcing function shares."""

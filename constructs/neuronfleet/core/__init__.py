"""What every construct shares: the error type, argument checks, rules, tagging, assets, the base stack."""

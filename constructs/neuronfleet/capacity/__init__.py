"""Capacity: alerts for jobs held for Trainium capacity, Capacity Blocks."""

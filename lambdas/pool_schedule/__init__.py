"""The shared pool's schedule function: day/night split, checkpoint signal, morning reclaim (handler, logic, adapters)."""

"""Pure cost logic: rows, ledgers, economics, waste rules (no AWS calls)."""

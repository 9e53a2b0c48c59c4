"""The modules at the root of lambdas/, under either layout: ``neuronfleet.lambdas.<package>`` (the wheel, the
tests, the constructs) or ``<package>`` (deployed: the asset root lambdas/ is the function's code root, so the
shared modules are top level there)."""

try:
    from .. import announcements, environment, namespaces, reservations, topic
except ImportError:  # deployed
    import announcements  # type: ignore[import-not-found,no-redef]
    import environment  # type: ignore[import-not-found,no-redef]
    import namespaces  # type: ignore[import-not-found,no-redef]
    import reservations  # type: ignore[import-not-found,no-redef]
    import topic  # type: ignore[import-not-found,no-redef]

__all__ = ["announcements", "environment", "namespaces", "reservations", "topic"]

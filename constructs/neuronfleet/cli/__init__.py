"""The ``neuronfleet`` command line: one entry point, one subcommand per feature (see :mod:`neuronfleet.cli.main`).

Importing this package starts no Node.js: nothing here (or in a registered command's module) imports aws-cdk-lib
at import time.
"""

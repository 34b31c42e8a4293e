"""The command line's commands, one module per group; :mod:`irglow.cli` registers them."""

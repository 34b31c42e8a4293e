"""Sub-commands of the neural models, registered into ``irglow``'s parser (imports deferred)."""

from __future__ import annotations

import argparse


def add_model_commands(sub: argparse._SubParsersAction) -> None:
    try:
        from irglow.models.twbert.cli import add_twbert_command
    except ImportError:
        add_twbert_command = None
    if add_twbert_command:
        add_twbert_command(sub)
    try:
        from irglow.models.glow.cli import add_glow_command
    except ImportError:
        add_glow_command = None
    if add_glow_command:
        add_glow_command(sub)
    try:
        from irglow.models.rerank.cli import add_rerank_commands
    except ImportError:
        add_rerank_commands = None
    if add_rerank_commands:
        add_rerank_commands(sub)

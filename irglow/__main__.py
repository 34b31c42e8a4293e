from irglow.cli import entry

entry()

"""One module per native loader; :func:`proof.all_loaders` finds them (no list to edit)."""

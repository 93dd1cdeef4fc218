"""Running agents in isolation (docker or bubblewrap) so that they produce auditable run dirs."""

"""The BNG control plane (P4Runtime controller)."""

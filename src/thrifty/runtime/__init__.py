"""Running inference: chains, seeds, progress, interruption, checkpoints, results."""

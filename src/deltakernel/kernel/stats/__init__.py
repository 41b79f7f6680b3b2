"""File statistics: parsing Delta stats for skipping, collecting them while writing."""

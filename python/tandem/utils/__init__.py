"""Utilities (torch.utils): tandem.utils.data."""
from . import data

__all__ = ["data"]

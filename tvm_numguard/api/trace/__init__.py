"""Trace and localization: which pass added how much error, where it starts, how it spreads."""

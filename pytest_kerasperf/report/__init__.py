"""Rendering only: terminal table, report sections, JSON results."""

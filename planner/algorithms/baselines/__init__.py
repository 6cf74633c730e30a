"""Baseline placements to compare against: single, roundrobin, random, expert."""

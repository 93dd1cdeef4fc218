"""Tests of single log adapters."""

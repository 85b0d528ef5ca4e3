"""Helpers the test modules share (test modules import these, never one another): the test
clock, the shared constants, organization setup, the datasets, and the fake CRMs."""

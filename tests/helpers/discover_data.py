"""The discover tests' company (tests/data/discover_*.csv): Lonestar's and Hill Country's
guids, everyone current at Lonestar in discover's order, and those of them in Texas."""

from __future__ import annotations

LONESTAR, HILL_COUNTRY = "D15C0000000000A1", "D15C0000000000B2"
# Everyone current at Lonestar, in discover's order: grade, seniority, last name.
EVERYONE = (
    "Fox King Adams Irwin Moore Park Hill Evans Ortiz Reed Brown Gray Jones Nash Cole Diaz Lopez"
).split()
TEXAS = {"Adams", "Brown", "Cole", "Diaz", "Evans", "Fox", "Gray", "Hill", "Irwin", "Jones"}
TEXAS |= {"King", "Lopez", "Moore", "Nash"}

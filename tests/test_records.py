from datetime import date

import pytest

from server.records import (
    REVENUE_RANGES,
    employee_range,
    month_of,
    month_to_stored,
    month_to_vendor,
)


@pytest.mark.parametrize(
    ("count", "label"),
    [
        (None, ""),
        (0, ""),
        (1, "1 to 10"),
        (10, "1 to 10"),
        (11, "11 to 50"),
        (200, "51 to 200"),
        (1000, "501 to 1000"),
        (5001, "5001 to 10,000"),
        (10_000, "5001 to 10,000"),
        (10_001, "10,001+"),
    ],
)
def test_employee_range(count: int | None, label: str) -> None:
    assert employee_range(count) == label


def test_months_round_trip_between_forms() -> None:
    assert month_to_stored("Jan-2020") == "2020-01"
    assert month_to_stored("dec-1999") == "1999-12"
    assert month_to_stored("2021-07-15") == "2021-07"
    assert month_to_vendor("2020-01") == "Jan-2020"
    assert month_to_vendor("") == ""
    assert month_of(date(2024, 3, 9)) == "2024-03"


@pytest.mark.parametrize("text", ["Foo-2020", "2020-13", "13/2020", "", "Jan-20"])
def test_bad_months_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="month"):
        month_to_stored(text)


def test_revenue_ranges_are_the_contract_strings() -> None:
    assert REVENUE_RANGES[0] == "$0 - $500K" and REVENUE_RANGES[-1] == "$10B+"
    assert len(REVENUE_RANGES) == 13

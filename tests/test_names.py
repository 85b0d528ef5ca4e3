import csv
import random
import tomllib
from pathlib import Path

import pytest

from server.names import (
    NICKNAMES_CSV,
    PersonName,
    first_keys,
    first_name_similarity,
    last_name_similarity,
    parse,
    same_first,
)


@pytest.mark.parametrize(
    ("sent", "reading"),
    [
        # "Last, First", case kept as sent
        ({"full": "Smith, John"}, ("John", "", "Smith")),
        ({"full": "SMITH, JOHN"}, ("JOHN", "", "SMITH")),
        ({"full": "van Gogh, Vincent"}, ("Vincent", "", "van Gogh")),
        # titles, suffixes, particles, quoted nicknames
        ({"full": "Dr. Robert J. Smith Jr."}, ("Robert", "J.", "Smith")),
        ({"full": "Smith, Dr. John A., PhD"}, ("John", "A.", "Smith")),
        ({"full": "Ludwig van der Rohe"}, ("Ludwig", "", "van der Rohe")),
        ({"full": "Maria de la Cruz"}, ("Maria", "", "de la Cruz")),
        ({"full": 'Robert "Bob" Smith'}, ("Robert", "", "Smith")),
        ({"full": "Mr Smith"}, ("", "", "Smith")),
        # parts: middle name in the first field, titles and suffixes in the parts
        ({"first": "Robert James", "last": "Smith"}, ("Robert", "James", "Smith")),
        (
            {"first": "Robert James", "middle": "Lee", "last": "Smith"},
            ("Robert", "James Lee", "Smith"),
        ),
        ({"first": "Dr. Robert", "last": "Smith, Jr."}, ("Robert", "", "Smith")),
        ({"first": "John", "last": "Garcia-Lopez Ph.D."}, ("John", "", "Garcia-Lopez")),
        ({"first": "  José ", "last": " Müller  "}, ("José", "", "Müller")),
        ({"first": "123", "last": "Smith"}, ("", "", "Smith")),
        # which input wins
        ({"full": "Bob Smith", "first": "Robert", "last": "Smith"}, ("Robert", "", "Smith")),
        ({"full": "Jane Doe", "last": "Doe"}, ("Jane", "", "Doe")),
        ({"last": "Smith"}, ("", "", "Smith")),
        ({"first": "Robert James"}, ("Robert", "", "James")),
        # swapped first and last are read as sent: telling them apart is the matcher's job
        ({"first": "Smith", "last": "John"}, ("Smith", "", "John")),
        ({"full": "Smith John"}, ("Smith", "", "John")),
    ],
)
def test_parse(sent: dict[str, str], reading: tuple[str, str, str]) -> None:
    assert parse(**sent) == PersonName(*reading)


@pytest.mark.parametrize(
    "sent",
    [
        {},
        {"full": "   "},
        {"full": "Madonna"},
        {"first": "Robert"},
        {"full": "Lee Jr."},
        {"full": "Dr."},
        {"full": ",,,"},
        {"full": "😀 😀"},
        {"full": "12345 67890"},
        {"first": "123", "last": "456"},
        {"full": "\x00\x01 \u202e"},
        {"full": "x" * 100_000},
        {"first": "Robert", "last": "🙂"},
    ],
)
def test_parse_without_a_surname_is_none(sent: dict[str, str]) -> None:
    assert parse(**sent) is None


def test_parse_never_raises() -> None:
    pick = random.Random(11).choice
    alphabet = "abcXYZ éøß,.-'\"()&/\\ 0123😀\u202e\x00\t\n" + "名字"
    for _ in range(500):
        text = "".join(pick(alphabet) for _ in range(pick([1, 5, 20, 300])))
        name = parse(full=text, first=text[:7], last=text[-9:])
        assert name is None or isinstance(name, PersonName)
        assert parse(full=text) is None or parse(full=text).last_key


def test_person_name_keys() -> None:
    name = PersonName("José", "Ana-María", "O'Brien Smith")
    assert (name.first_key, name.middle_key, name.last_key) == ("jose", "anamaria", "obriensmith")
    assert name == PersonName("José", "Ana-María", "O'Brien Smith")


@pytest.mark.parametrize(
    ("first", "includes", "excludes"),
    [
        ("Bob", {"bob", "robert", "rob", "bobby"}, {"william"}),
        ("ROBERT", {"robert", "bob", "roberto"}, {"roberta"}),
        ("Liz", {"liz", "elizabeth", "beth"}, {"lisa"}),
        ("Alex", {"alex", "alexander", "alexandra"}, set()),
        ("Alexander", {"alex", "sasha"}, {"alexandra"}),
        ("José", {"jose", "joseph", "joe"}, set()),
    ],
)
def test_first_keys(first: str, includes: set[str], excludes: set[str]) -> None:
    keys = first_keys(first)
    assert includes <= keys
    assert not excludes & keys


@pytest.mark.parametrize(
    ("first", "keys"),
    [("J.", {"j"}), ("J", {"j"}), ("Zebulon", {"zebulon"}), ("", set()), ("😀", set())],
)
def test_first_keys_of_initials_and_unknown_names(first: str, keys: set[str]) -> None:
    assert first_keys(first) == keys


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        # same key
        ("José", "JOSE", 1.0),
        ("Jean-Luc", "jean luc", 1.0),
        # nicknames, both directions
        ("Bob", "Robert", 0.9),
        ("Robert", "Bob", 0.9),
        ("Bill", "William", 0.9),
        ("William", "Bill", 0.9),
        ("Liz", "Elizabeth", 0.9),
        ("Elizabeth", "Liz", 0.9),
        ("Peggy", "Margaret", 0.9),
        ("Margaret", "Peggy", 0.9),
        ("Kate", "Catherine", 0.9),
        ("Katie", "Katherine", 0.9),
        ("Cathy", "Catherine", 0.9),
        ("Mike", "Michael", 0.9),
        ("Jim", "James", 0.9),
        ("Jimmy", "James", 0.9),
        ("Dick", "Richard", 0.9),
        ("Rick", "Richard", 0.9),
        ("Chuck", "Charles", 0.9),
        ("Sasha", "Alexander", 0.9),
        ("Sasha", "Alexandra", 0.9),
        ("Alex", "Alexander", 0.9),
        ("Alex", "Alexandra", 0.9),
        ("Steven", "Stephen", 0.9),
        ("Giuseppe", "Joseph", 0.9),
        ("Paco", "Francisco", 0.9),
        ("Misha", "Michael", 0.9),
        ("Katya", "Catherine", 0.9),
        # decided: "Chris" is a nickname of Christine and Christina as well as Christopher
        ("Chris", "Christine", 0.9),
        ("Chris", "Christopher", 0.9),
        # initials
        ("J.", "John", 0.6),
        ("John", "J", 0.6),
        ("B.", "Robert", 0.6),  # through Bob
        ("K.", "John", 0.0),
        ("J.", "j", 1.0),
        ("J", "K", 0.0),
        # different names, however close the spelling
        ("Christopher", "Christine", 0.0),
        ("Alexander", "Alexandra", 0.0),
        ("Dan", "Daniela", 0.0),
        ("Daniel", "Daniela", 0.0),
        ("John", "Joan", 0.0),
        ("Jon", "Jan", 0.0),
        ("Paul", "Paula", 0.0),
        ("Mario", "Maria", 0.0),
        ("Louis", "Louise", 0.0),
        ("Justin", "Justine", 0.0),
        ("Francis", "Frances", 0.0),
        ("Michael", "Michelle", 0.0),
        ("Samuel", "Samantha", 0.0),
        ("Carl", "Charles", 0.0),  # decided: Carl/Karl are their own group
        # junk
        ("", "John", 0.0),
        ("John", "", 0.0),
        ("😀", "😀", 0.0),
    ],
)
def test_first_name_similarity(a: str, b: str, score: float) -> None:
    assert first_name_similarity(a, b) == score


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        ("Micheal", "Michael", 0.85, 0.85),  # typos stop just below a nickname
        ("Jonh", "John", 0.8, 0.85),
        ("Rbert", "Robert", 0.8, 0.85),
        ("Zebulon", "Zebulun", 0.8, 0.85),
        ("Mary Ann", "Mary", 0.6, 0.8),
        ("Zebulon", "Robert", 0.0, 0.5),
    ],
)
def test_first_name_typos(a: str, b: str, low: float, high: float) -> None:
    assert low <= first_name_similarity(a, b) <= high


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Bob", "Robert", True),
        ("Robert", "Bob", True),
        ("José", "Jose", True),
        ("Alex", "Alexandra", True),
        ("Alexander", "Alexandra", False),
        ("J.", "John", False),
        ("Micheal", "Michael", False),
        ("", "", False),
    ],
)
def test_same_first(a: str, b: str, same: bool) -> None:
    assert same_first(a, b) is same


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        ("Smith", "SMITH", 1.0),
        ("Müller", "Muller", 1.0),
        ("O'Brien", "OBrien", 1.0),
        ("van der Berg", "Vanderberg", 1.0),
        ("Garcia Lopez", "Garcia", 0.9),
        ("Garcia", "Garcia Lopez", 0.9),
        ("Garcia-Lopez", "Lopez", 0.9),
        ("de la Cruz", "Cruz", 0.9),
        ("van der Berg", "van den Berg", 0.9),
        ("", "Smith", 0.0),
        ("Smith", "😀", 0.0),
    ],
)
def test_last_name_similarity(a: str, b: str, score: float) -> None:
    assert last_name_similarity(a, b) == score


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        ("Schmidt", "Schmitt", 0.85, 0.95),
        ("Thompson", "Thomson", 0.85, 0.95),
        ("Kowalski", "Kowalsky", 0.85, 0.95),
        ("Mueller", "Müller", 0.85, 0.95),
        ("Rodriguez", "Rodrigues", 0.85, 0.95),
        ("Smith", "Jones", 0.0, 0.3),
        ("Nguyen", "Smith", 0.0, 0.3),
        ("Garcia", "Lopez", 0.0, 0.3),
        ("Brown", "Green", 0.0, 0.5),
    ],
)
def test_last_name_typos(a: str, b: str, low: float, high: float) -> None:
    assert low <= last_name_similarity(a, b) <= high


def _nickname_groups() -> list[list[str]]:
    with NICKNAMES_CSV.open(encoding="utf-8", newline="") as file:
        return list(csv.reader(line for line in file if not line.startswith("#")))


def test_nickname_table_is_tidy() -> None:
    groups = _nickname_groups()
    formal = [group[0] for group in groups]
    assert len(groups) >= 250
    assert len(set(formal)) == len(formal)
    for group in groups:
        assert len(group) >= 2 and len(set(group)) == len(group), group
        assert all(name and name == name.strip().lower() for name in group), group


def test_nickname_table_ships_as_package_data() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["server"]
    inside_package = NICKNAMES_CSV.relative_to(NICKNAMES_CSV.parents[1])
    assert any(inside_package.match(pattern) for pattern in patterns)

"""Where SQLite's SQL and PostgreSQL's differ (server/storage/dialect.py): each named function
gives SQL that runs, and means the same, on either backend, also through PgBouncer."""

from __future__ import annotations

import json

import pytest
from sqlite_utils import Database

from server.storage import db
from server.storage.dialect import (
    execute_planned_per_call,
    indexed_by,
    is_postgres,
    json_array_values,
    json_merged,
    one_of,
    position,
    result_names,
    row_lock,
    smallest,
)

pytestmark = [pytest.mark.both_backends, pytest.mark.through_pgbouncer]


def test_position_counts_from_one_and_is_zero_when_not_found(database: Database) -> None:
    sql = f"SELECT {position(database, '?', '?')}, {position(database, '?', '?')}"

    assert database.execute(sql, ["a,b,c", ",c", "a,b,c", "d"]).fetchone() == (4, 0)


def test_json_array_values_are_rows_of_a_value_column(database: Database) -> None:
    sql = f"SELECT value FROM {json_array_values(database, '?')} ORDER BY value"
    values = database.execute(sql, [json.dumps(["b", "a:1", "c"])]).fetchall()

    assert [value for (value,) in values] == ["a:1", "b", "c"]


def test_an_empty_json_array_has_no_values(database: Database) -> None:
    sql = f"SELECT count(*) FROM {json_array_values(database, '?')}"

    assert database.execute(sql, ["[]"]).fetchone() == (0,)


def test_a_table_indexed_by_its_index_is_queried_on_either_backend(database: Database) -> None:
    named = indexed_by(database, "employments_discover")  # of the Active employments
    sql = f"SELECT count(*) FROM employments {named} WHERE company_guid = ? AND status = 'Active'"

    assert database.execute(sql, ["A" * 16]).fetchone() == (0,)
    assert ("INDEXED BY" in named) is not is_postgres(database)


def test_a_query_planned_per_call_answers_as_any_other(database: Database) -> None:
    with db.write(database):
        database.execute("INSERT INTO company_name_words (word, companies) VALUES (?, ?)", ["x", 2])
    sql = "SELECT companies FROM company_name_words WHERE word = ?"

    for _ in range(12):  # past psycopg's preparing a statement at its sixth run
        assert execute_planned_per_call(database, sql, ["x"]).fetchall() == [(2,)]


def test_one_of_finds_the_rows_of_one_value_and_of_several(database: Database) -> None:
    with db.write(database):
        for word, companies in (("a", 1), ("b", 2), ("c", 3)):
            sql = "INSERT INTO company_name_words (word, companies) VALUES (?, ?)"
            database.execute(sql, [word, companies])

    def found(words: list[str]) -> list[tuple[str, int]]:
        where, params = one_of(database, "word", words)
        sql = f"SELECT word, companies FROM company_name_words WHERE {where} ORDER BY word"
        return database.execute(sql, params).fetchall()

    assert found(["b"]) == [("b", 2)]
    assert found(["c", "a", "z"]) == [("a", 1), ("c", 3)]
    assert found(["a", "b"]) == [("a", 1), ("b", 2)]


def test_one_of_is_one_statement_for_any_number_of_values_on_postgresql(
    database: Database,
) -> None:
    """So that psycopg prepares it: a list `IN (?, …)` is a statement per length."""
    statements = {one_of(database, "word", ["a"] * n)[0] for n in (2, 3, 7)}

    assert len(statements) == (1 if is_postgres(database) else 3)
    assert one_of(database, "word", ["a"]) == ("word = ?", ["a"])


def test_the_smallest_of_several_values_and_of_one(database: Database) -> None:
    sql = f"SELECT {smallest(database, ['?', '?', '?'])}, {smallest(database, ['?'])}"

    assert database.execute(sql, [3.5, 1.25, 2, 7]).fetchone() == (1.25, 7)


def test_a_json_object_merged_keeps_its_keys_and_takes_the_patchs(database: Database) -> None:
    sql = f"SELECT {json_merged(database, '?', '?')}"
    merged = database.execute(sql, ['{"a": 1, "b": "x"}', '{"b": "y", "c": 2}']).fetchone()[0]

    assert json.loads(merged) == {"a": 1, "b": "y", "c": 2}


def test_rows_read_with_a_row_lock_are_those_without(database: Database) -> None:
    with db.write(database):
        database.execute("INSERT INTO company_name_words (word, companies) VALUES (?, ?)", ["z", 3])
        sql = "SELECT companies FROM company_name_words WHERE word = ?"
        for skip_locked in (False, True):
            locked = sql + row_lock(database, skip_locked=skip_locked)
            assert database.execute(locked, ["z"]).fetchall() == [(3,)]
    assert ("FOR UPDATE" in row_lock(database)) is is_postgres(database)


def test_a_querys_column_names_are_given_in_order(database: Database) -> None:
    cursor = database.execute("SELECT 1 AS one, 'x' AS two, NULL AS three")

    assert result_names(cursor) == ["one", "two", "three"]

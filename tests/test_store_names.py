"""The store's reads of company name words (server/storage/store.py), on either backend: what
the matcher corrects a misspelt company name word from."""

from __future__ import annotations

import pytest
from sqlite_utils import Database

from server.storage import db, store

pytestmark = pytest.mark.both_backends

WORDS = [("kobe", 3), ("kobo", 1), ("kob", 1), ("kobenhavn", 1), ("lobe", 2), ("steel", 5)]


@pytest.fixture
def words(database: Database) -> Database:
    with db.write(database):
        for word, companies in WORDS:
            sql = "INSERT INTO company_name_words (word, companies) VALUES (?, ?)"
            database.execute(sql, [word, companies])
    return database


def test_the_words_of_a_first_letter_and_length_are_read(words: Database) -> None:
    found = store.company_words_like(words, "k", 4, 6)
    assert sorted(found) == [("kobe", 3), ("kobo", 1)]


def test_the_words_named_beside_them_are_read_in_the_same_statement(words: Database) -> None:
    found = store.company_words_like(words, "k", 4, 6, ["lobe", "steel", "kobe", "none"])
    assert sorted(found) == [("kobe", 3), ("kobo", 1), ("lobe", 2), ("steel", 5)]

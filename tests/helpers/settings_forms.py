"""The settings page through the Flask test client, as a browser fills it: sign in with an
admin key, post a form with the CSRF token of the page it sits on, read a page's text or markup."""

from __future__ import annotations

import html
import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse


def token(page: TestResponse) -> str:
    """The CSRF token of the first form on a page."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
    assert found, page.get_data(as_text=True)
    return found.group(1)


def sign_in(client: FlaskClient, key: str) -> TestResponse:
    """Post the sign-in form with a key; the answer says whether it was taken."""
    form = client.get("/settings/sign-in")
    return client.post("/settings/sign-in", data={"api_key": key, "csrf_token": token(form)})


def signed_in(app: Flask, key: str) -> FlaskClient:
    """A new client of the app, signed in with an admin key."""
    client = app.test_client()
    response = sign_in(client, key)
    assert response.status_code == 303, text(response)
    return client


def submit(client: FlaskClient, page: str, path: str, **data: Any) -> TestResponse:
    """Post a form the way the browser does: with the token of the page it sits on."""
    return client.post(path, data={**data, "csrf_token": token(client.get(page))})


def text(response: TestResponse) -> str:
    """A page's text as read: tags dropped, HTML's escapes undone, white space folded."""
    words = re.sub(r"<[^>]*>", " ", response.get_data(as_text=True))
    return " ".join(html.unescape(words).split())


def source(response: TestResponse) -> str:
    """A page's HTML as sent, tags and attributes kept, with HTML's escapes undone."""
    return html.unescape(response.get_data(as_text=True))

from server.pg import copy_line


def test_copy_line_writes_text_numbers_and_nulls_between_tabs() -> None:
    line = copy_line(("Ava", "", 1200, 30.25, -0.5, None, "é"))

    assert line == "Ava\t\t1200\t30.25\t-0.5\t\\N\té\n".encode()


def test_copy_line_escapes_what_copy_would_read_as_syntax() -> None:
    line = copy_line(("a\tb", "back\\slash", "\\N", "two\nlines\r", None), end="\t")

    assert line == b"a\\tb\tback\\\\slash\t\\\\N\ttwo\\nlines\\r\t\\N\t"


def test_copy_line_writes_a_str_subclass_as_its_text() -> None:
    class Name(str):
        pass

    assert copy_line((Name("Stone"), Name("x\ty"))) == b"Stone\tx\\ty\n"

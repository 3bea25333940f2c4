"""What Excel's TEXT(value, format) does with a value that is text.

Excel reads numeric text as its number before formatting it (``TEXT("0405", "00\\:00")``
is ``"04:05"``), and formats any other text with the format's text section: the fourth
section, or a lone section holding ``@`` (``TEXT("abc", "0;;;\\0")`` is ``"0"``,
``TEXT("x", "Mr @")`` is ``"Mr x"``). With no text section the text comes back unchanged.
Numbers are left for an engine to format. Where regrade is unsure how Excel reads a text
(a date, a time, an amount with a currency sign or separators) or how a section shows
text, it raises :class:`NotImplementedMode` and leaves the call to the engine.
"""

from __future__ import annotations

import re

from regrade.values import ExcelError
from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.functions.values import as_number

# Text Excel may read as a date, a time or an amount: digits among separators, signs and month names
_MAYBE_A_NUMBER = re.compile(
    r"[\s\d,./:+\-$%()]*\d[\s\d,./:+\-$%()]*"
    r"|.*\d.*(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|am|pm).*"
    r"|.*(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec).*\d.*",
    re.IGNORECASE,
)
# Characters a text section shows as they are without quotes
_PLAIN = set(" $-+/():!^&'~{}<>=")


def text_input(value: object, format_text: object) -> object:
    """The value TEXT formats: a number (or a boolean or error, which TEXT keeps) for the
    engine to format, or the finished text for a text value."""
    if isinstance(format_text, ExcelError):
        return format_text
    if value is None:
        return 0.0  # an empty cell is 0
    if not isinstance(value, str):
        return value
    number = as_number(value)
    if number is not None:
        return number
    if _MAYBE_A_NUMBER.fullmatch(value):
        raise NotImplementedMode(f"TEXT of {value!r}, which Excel may read as a number")
    if not isinstance(format_text, str):
        raise NotImplementedMode("TEXT with a format that is not text")
    section = text_section(format_text)
    return value if section is None else show_text(value, section)


def text_section(format_text: str) -> str | None:
    """The section of a number format that shows text, None when it has none."""
    sections = _sections(format_text)
    if len(sections) >= 4:
        return sections[3]
    if len(sections) == 1 and "@" in _unquoted(sections[0]):
        return sections[0]
    if any("@" in _unquoted(s) for s in sections):
        raise NotImplementedMode("a text placeholder @ in a number section")
    return None


def show_text(text: str, section: str) -> str:
    """The text as a text section shows it."""
    shown: list[str] = []
    index = 0
    while index < len(section):
        char = section[index]
        if char in "\\_" and index + 1 < len(section):  # an escaped character; _x leaves the width of x
            shown.append(section[index + 1] if char == "\\" else " ")
            index += 2
        elif char == '"':
            end = section.find('"', index + 1)
            end = len(section) if end < 0 else end
            shown.append(section[index + 1 : end])
            index = end + 1
        elif char == "[":  # a colour or a condition: shows nothing
            end = section.find("]", index)
            index = len(section) if end < 0 else end + 1
        elif char == "@":
            shown.append(text)
            index += 1
        elif char in _PLAIN:
            shown.append(char)
            index += 1
        else:
            raise NotImplementedMode(f"the character {char!r} in a text section")
    return "".join(shown)


def _sections(format_text: str) -> list[str]:
    """The format split at each ``;`` outside quotes and not escaped."""
    sections, current, index, quoted = [], [], 0, False
    while index < len(format_text):
        char = format_text[index]
        if char == "\\" and not quoted and index + 1 < len(format_text):
            current.append(format_text[index : index + 2])
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        if char == ";" and not quoted:
            sections.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    sections.append("".join(current))
    return sections


def _unquoted(section: str) -> str:
    """The section without its quoted and escaped characters."""
    return re.sub(r'"[^"]*"?|\\.', "", section)

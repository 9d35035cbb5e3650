"""The manage page and demo chat, used in Chromium against the real local server."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, Route, expect

from tests.browser.conftest import OpenPage, Site, page_url
from tests.support.local_server import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCREENSHOT = ROOT / "docs" / "images" / "manage-page.png"
SCREENSHOT_LIMIT = 200 * 1024
#: set to 1 to refresh the README's screenshot from the journey (a run never writes into
#: the checkout otherwise)
REFRESH_SCREENSHOT = "CHATMEMORY_REFRESH_SCREENSHOT"


def say_in_chat(page: Page, message: str) -> Locator:
    """Send a message in the demo chat; the reply, once it is whole."""
    replies = page.locator("#chat-log .turn.assistant")
    before = replies.count()
    page.get_by_label("Message").fill(message)
    page.get_by_label("Message").press("Enter")
    reply = replies.nth(before)
    expect(reply).to_have_attribute("aria-busy", "false")
    return reply


def memory(page: Page, text: str) -> Locator:
    """The memory in use with that text, on the page."""
    return page.locator("li.memory:not(.past)", has=page.locator(".memory-text", has_text=text))


def test_remember_see_correct_undo_and_delete(
    open_page: OpenPage, site: Site, tmp_path: Path
) -> None:
    # Given Ada on her page
    page = open_page("ada", width=1000, height=990)  # the screenshot shows the history too

    # When she tells the demo chat to remember something, its reply streamed
    with page.expect_response("**/v1/chat") as answered:
        reply = say_in_chat(page, "Remember that I am vegetarian.")
    assert answered.value.headers["content-type"].startswith("text/event-stream")

    # Then it is saved at once: under the reply and on the page, dated, with its shelf life
    expect(reply.locator(".used")).to_have_text("Saved now: Is vegetarian.")
    vegetarian = memory(page, "Is vegetarian.")
    expect(vegetarian).to_contain_text("2 years left")
    expect(vegetarian.locator("time")).to_have_text(re.compile(r"^\d{4}-\d{2}-\d{2}$"))

    # And on request it shows the message it came from
    vegetarian.get_by_role("button", name="Where from?").click()
    expect(vegetarian.locator("blockquote")).to_have_text("Remember that I am vegetarian.")

    # When she corrects it
    vegetarian.get_by_role("button", name="Correct").click()
    vegetarian.get_by_label("Corrected text").fill("Is vegan.")
    vegetarian.get_by_role("button", name="Save correction").click()

    # Then the correction is believed, and the old words are greyed history with their arc
    expect(memory(page, "Is vegan.")).to_be_visible()
    past = page.locator("li.memory.past", has_text="Is vegetarian.")
    expect(past).to_contain_text("superseded")
    expect(past.locator(".arc")).to_have_text(re.compile(r"^believed \d{4}-\d{2} → \d{4}-\d{2}$"))
    assert site.texts("ada") == ["Is vegan."]

    # When she mentions things in passing, the conversation is learned in the background
    say_in_chat(page, "I live in Pune and I have a job interview at Acme on Thursday.")
    assert "ran 1 write pipeline run(s)" in site.served.cli("flush").stdout
    reply = say_in_chat(page, "What should I cook for dinner tonight?")

    # Then the reply shows the memories it used, a notice says what was noted in the
    # background, and the thread shows with its status
    expect(reply.locator(".used")).to_contain_text("Memories used — ")
    expect(reply.locator(".used")).to_contain_text("Is vegan.")
    toast = page.locator(".toast")
    expect(toast).to_have_count(1)
    expect(toast).to_contain_text("noted: Lives in Pune.")
    thread = memory(page, "Is job-hunting")
    expect(thread).to_contain_text("thread: live")
    taken = tmp_path / SCREENSHOT.name
    page.screenshot(path=str(taken))
    assert taken.stat().st_size <= SCREENSHOT_LIMIT  # small enough for the README
    if os.environ.get(REFRESH_SCREENSHOT) == "1":
        shutil.copyfile(taken, SCREENSHOT)
    assert page.evaluate(LOW_CONTRAST_TEXTS) == []  # every text at WCAG AA, history included

    # When she undoes it
    toast.get_by_role("button", name="Undo").click()

    # Then what that write learned is forgotten again, for real, and her correction stays
    expect(toast).to_contain_text("Undone")
    expect(memory(page, "Lives in Pune.")).to_have_count(0)
    expect(memory(page, "Is job-hunting")).to_have_count(0)
    assert site.texts("ada") == ["Is vegan."]

    # When she deletes the correction
    memory(page, "Is vegan.").get_by_role("button", name="Delete").click()

    # Then it is gone from the page and from the server
    expect(page.get_by_role("status")).to_have_text("Deleted: Is vegan.")
    expect(page.locator("li.memory:not(.past)")).to_have_count(0)
    assert site.texts("ada") == []


def test_the_screenshot_in_the_readme_is_there_and_small() -> None:
    assert SCREENSHOT.stat().st_size <= SCREENSHOT_LIMIT


def test_the_note_meter_flags_the_401st_character_and_refuses_to_save(
    open_page: OpenPage, site: Site
) -> None:
    # Given Bo's page
    page = open_page("bo")
    note = page.get_by_label("A note every persona reads")

    # When he types one character past the limit
    note.fill("a" * 400)
    expect(page.locator("#note-meter")).to_have_text("400 / 400")
    note.press("End")
    note.press_sequentially("b")

    # Then the meter flags it and the note cannot be saved
    expect(page.locator("#note-meter")).to_have_text("401 / 400: 1 too many")
    expect(note).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_role("button", name="Save note")).to_be_disabled()

    # When he takes it back and saves
    note.press("Backspace")
    page.get_by_role("button", name="Save note").click()

    # Then exactly 400 characters are kept, and still there after a reload
    expect(page.get_by_role("status")).to_have_text("Note saved.")
    assert site.call("GET", "/v1/memory/settings", "bo")[1]["note"] == "a" * 400
    page.reload()
    expect(note).to_have_value("a" * 400)
    expect(page.locator("#note-meter")).to_have_text("400 / 400")


def test_forget_everything_asks_first(open_page: OpenPage, site: Site) -> None:
    # Given Cy with two memories
    for text in ("Has a cat named Miso.", "Lives in Lyon."):
        assert site.call("POST", "/v1/memories", "cy", {"text": text})[0] == 201
    page = open_page("cy")
    expect(page.locator("li.memory")).to_have_count(2)

    # When he asks to forget everything and then changes his mind
    page.get_by_role("button", name="Forget everything…").click()
    dialog = page.get_by_role("dialog", name="Forget everything?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Keep my memories").click()

    # Then nothing is forgotten
    expect(dialog).to_be_hidden()
    assert len(site.texts("cy")) == 2

    # When he confirms
    page.get_by_role("button", name="Forget everything…").click()
    dialog.get_by_role("button", name="Forget everything").click()

    # Then every memory is gone
    expect(page.get_by_text("Nothing is remembered about you yet.")).to_be_visible()
    assert site.texts("cy") == []


def test_the_switch_and_the_mute_are_saved_for_real(open_page: OpenPage, site: Site) -> None:
    # Given Di, whom the default persona remembers
    assert site.call("POST", "/v1/memories", "di", {"text": "Plays the cello."})[0] == 201
    page = open_page("di")

    # When she mutes that persona and switches memory off
    page.get_by_label("Mute Assistant (it forgets me)").check()
    expect(page.get_by_role("status")).to_contain_text("Assistant is muted")
    page.get_by_role("switch", name="Remember things about me").uncheck()
    expect(page.get_by_role("status")).to_contain_text("Memory is off")

    # Then the server holds both, and the page shows them after a reload
    settings = site.call("GET", "/v1/memory/settings", "di")[1]
    assert settings["enabled"] is False and settings["muted_personas"] == ["assistant"]
    page.reload()
    expect(page.get_by_label("Mute Assistant (it forgets me)")).to_be_checked()
    expect(page.get_by_role("switch", name="Remember things about me")).not_to_be_checked()


def test_the_token_leaves_the_address_bar_and_stays_in_the_tab_only(
    open_page: OpenPage, site: Site
) -> None:
    # Given the address `chatmemory open` prints
    printed = site.served.cli("open", "eve", "--no-browser").stdout.strip()
    assert printed.startswith(f"{site.served.url}/#token=")

    # When Eve opens it
    page = open_page("eve", url=printed)

    # Then the token is gone from the address and the history, kept only for this tab
    assert page.url == f"{site.served.url}/"
    stored = page.evaluate("() => [sessionStorage.length, localStorage.length, document.cookie]")
    assert stored == [1, 0, ""]

    # And a reload keeps her signed in; signing out forgets the token
    page.reload()
    expect(page.get_by_text("Signed in as eve")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length") == 0


def test_a_link_with_someone_elses_token_signs_in_only_if_asked(
    browser: Browser, site: Site
) -> None:
    # Given a link that carries Mallory's token, opened in a fresh tab
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(page_url(site.served.url, site.token_for("mallory")))

        # Then the page asks first, and keeps the token nowhere until asked
        expect(page.get_by_text("This link signs you in as mallory.")).to_be_visible()
        assert page.url == f"{site.served.url}/"
        assert page.evaluate("() => sessionStorage.length") == 0
        expect(page.get_by_text("Signed in as mallory")).to_be_hidden()

        # And "Not me" leaves the tab signed out, the sign-in form ready
        page.get_by_role("button", name="Not me").click()
        expect(page.get_by_label("Token")).to_be_visible()
        page.reload()
        expect(page.get_by_text("Signed in as mallory")).to_be_hidden()
    finally:
        context.close()


def test_keyboard_only_chat_and_delete_with_focus_visible(open_page: OpenPage) -> None:
    # Given Fay, who uses only the keyboard
    page = open_page("fay")

    # When she tabs to the message box, says something to remember and presses Enter
    tab_until(page, "#chat-input")
    page.keyboard.type("Remember that I am allergic to peanuts.")
    page.keyboard.press("Enter")
    allergy = memory(page, "Is allergic to peanuts.")
    expect(allergy).to_be_visible()

    # Then she reaches its delete button backwards, sees where focus is, and deletes it
    delete = allergy.get_by_role("button", name="Delete")
    tab_until(page, "li.memory button.danger", backwards=True)
    expect(delete).to_be_focused()
    outline = delete.evaluate("(button) => getComputedStyle(button).outlineStyle")
    assert outline == "solid"
    page.keyboard.press("Enter")
    expect(page.locator("li.memory")).to_have_count(0)


def test_a_phone_width_page_fits_and_chats(open_page: OpenPage) -> None:
    # Given Gus on a 375 px wide phone
    page = open_page("gus", width=375, height=740)

    # When he chats
    reply = say_in_chat(page, "Remember that I cycle to work.")

    # Then the page fits the screen: nothing is cut off sideways
    expect(reply.locator(".used")).to_have_text("Saved now: Cycles to work.")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    assert page.evaluate(LOW_CONTRAST_TEXTS) == []
    for name in ("Send", "Save note", "Forget everything…", "Delete"):
        box = page.get_by_role("button", name=name).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375, name


def test_where_the_gateway_cannot_stream_the_whole_reply_still_shows(
    open_page: OpenPage,
) -> None:
    # Given Hal's page behind a gateway that answers chat as one JSON object (API Gateway
    # on AWS): the real server's answer to the same call, asked for as JSON
    page = open_page("hal")

    def as_json(route: Route) -> None:
        headers = {**route.request.headers, "accept": "application/json"}
        route.fulfill(response=route.fetch(headers=headers))

    page.route("**/v1/chat", as_json)

    # When he chats
    with page.expect_response("**/v1/chat") as answered:
        reply = say_in_chat(page, "Remember that I play chess.")

    # Then the reply and what it saved show as they would have streamed
    assert answered.value.headers["content-type"].startswith("application/json")
    expect(reply.locator(".turn-text")).to_contain_text("I'll remember: Plays chess.")
    expect(reply.locator(".used")).to_have_text("Saved now: Plays chess.")


# Every visible text's contrast with the background it sits on (WCAG 2's formula).
LOW_CONTRAST_TEXTS = r"""() => {
  const parse = (css) => {
    const parts = (css.match(/rgba?\(([^)]+)\)/) || [, ""])[1].split(/[ ,/]+/).filter(Boolean);
    return parts.length ? parts.map(Number).concat(parts.length === 3 ? [1] : []) : null;
  };
  const channel = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const background = (element) => {
    for (let e = element; e; e = e.parentElement) {
      const colour = parse(getComputedStyle(e).backgroundColor);
      if (colour && colour[3] > 0) return colour;
    }
    return [255, 255, 255, 1];
  };
  const low = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const element = walker.currentNode.parentElement;
    const text = walker.currentNode.textContent.trim();
    if (!text || !element.checkVisibility()) continue;
    if (element.closest(".visually-hidden, :disabled")) continue; // (disabled: exempt)
    const a = luminance(parse(getComputedStyle(element).color));
    const b = luminance(background(element));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(`${text.slice(0, 40)}: ${ratio.toFixed(2)}`);
  }
  return low;
}"""


def tab_until(page: Page, selector: str, *, backwards: bool = False, limit: int = 60) -> None:
    """Press Tab (or Shift+Tab) until focus is on the first element matching `selector`."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} is not reachable with {key}")

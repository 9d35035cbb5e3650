"""The manage page and demo chat in a real browser (Chromium through Playwright)."""

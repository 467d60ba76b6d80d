"""Renderers: terminal tables, the audit page's HTML, JSON/CSV writers, inert untrusted text."""

"""Framework adapters: one line instruments an agent whose loop a framework owns.

Each adapter module imports its framework lazily, only when used; none adds a runtime
dependency to the collector. See docs/collector.md, "Framework adapters".
"""

"""Adapters to other libraries; each is imported only on request and imports its library lazily."""

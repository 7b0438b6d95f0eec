"""The Label Studio side of ls-agreement: sync, push-back, views, events, demo."""

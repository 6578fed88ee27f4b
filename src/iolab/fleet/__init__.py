"""The fleet: blocks of a plan run on many test hosts (Celery + Redis), PostgreSQL the truth.

Imports nothing, so `iolab.fleet.config` stays light; docs/fleet.md has the whole story.
"""

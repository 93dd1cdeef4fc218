"""The rules engine: rules are YAML data (``rules/``), evaluated over code units, log events and runs.

What lives here
---------------
:mod:`~mleaudit.audit.rules.spec` (typed rule specs), :mod:`~mleaudit.audit.rules.loader`
(``find_rules_root``, ``load_ruleset``) with :mod:`~mleaudit.audit.rules.cache` (parsed rule
documents kept on disk), :mod:`~mleaudit.audit.rules.matchers` (compiled query, regex, strings,
builtin, all/any/not/inside/terms matchers), :mod:`~mleaudit.audit.rules.prefilter` (literals a
regex needs), :mod:`~mleaudit.audit.rules.strings` (folded values of string expressions),
:mod:`~mleaudit.audit.rules.policy` (a competition's ``RulePolicy``: allowed URLs, label-leak
columns), :mod:`~mleaudit.audit.rules.match` (``Match``, ``Capture``),
:mod:`~mleaudit.audit.rules.context` (``RunContext``, what a run-level check reads),
:mod:`~mleaudit.audit.rules.registry` (``CHECKS``, the ``check`` decorator: the built-in checks'
registry), :mod:`~mleaudit.audit.rules.engine` (``evaluate_ruleset``, ``evaluate_rules``),
:mod:`~mleaudit.audit.rules.testing` (``run_rule_tests`` for the rules' self-tests),
:mod:`~mleaudit.audit.rules.docs` (summaries and the markdown catalogue) and
:mod:`~mleaudit.audit.rules.cli` (``mleaudit rules``).

What it may import
------------------
The model, parsing, units, the text cache, log and run loading (the self-tests read small
transcripts and fixture runs) and :mod:`mleaudit.grading`'s readers of untrusted files. Never the
built-in checks (:mod:`mleaudit.audit.checks`, which import this package and register themselves
in :mod:`~mleaudit.audit.rules.registry`; a look-up there imports them when nobody has), the
pipeline or the command line other than its own ``cli``. Nothing is imported here, so importing
a submodule stays cheap.

Adding a rule
-------------
Write ``rules/<category>/<id>.yaml`` (the schema is ``rules/schema.json``) and its self-test
``<id>.test.yaml`` beside it, with cases that must and must not fire; ``mleaudit rules test``
runs every case, ``mleaudit rules docs`` regenerates the catalogue. Only when no matcher can say
it, add a built-in check (see :mod:`mleaudit.audit.checks`) and refer to it with
``match: {builtin: <name>}``.
"""

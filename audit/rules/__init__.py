"""The rules engine: rules are YAML data (``rules/``), evaluated over code units, log events and runs.

Modules: :mod:`~mleaudit.audit.rules.spec` (typed rule specs), :mod:`~mleaudit.audit.rules.loader`
(``find_rules_root``, ``load_ruleset``), :mod:`~mleaudit.audit.rules.matchers` (compiled query, regex,
strings, builtin, all/any/not/inside/terms matchers), :mod:`~mleaudit.audit.rules.strings` (folded values
of string expressions), :mod:`~mleaudit.audit.rules.policy` (a competition's ``RulePolicy``:
allowed URLs, label-leak columns), :mod:`~mleaudit.audit.rules.match` (``Match``, ``Capture``),
:mod:`~mleaudit.audit.rules.engine` (``evaluate_ruleset``, ``evaluate_rules``),
:mod:`~mleaudit.audit.rules.testing` (``run_rule_tests`` for the rules' self-tests),
:mod:`~mleaudit.audit.rules.docs` (summaries and the markdown catalogue) and :mod:`~mleaudit.audit.rules.cli`
(``mleaudit rules``). Nothing is imported here, so importing a
submodule stays cheap and free of cycles with :mod:`mleaudit.audit.checks`.
"""

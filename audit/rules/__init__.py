"""The rules engine: rules are YAML data (``rules/``), evaluated over code units, log events and runs.

Modules: :mod:`~audit.rules.spec` (typed rule specs), :mod:`~audit.rules.loader`
(``find_rules_root``, ``load_ruleset``), :mod:`~audit.rules.matchers` (compiled query, regex,
strings, builtin, all/any/not/inside/terms matchers), :mod:`~audit.rules.strings` (folded values
of string expressions), :mod:`~audit.rules.policy` (a competition's ``RulePolicy``:
allowed URLs, label-leak columns), :mod:`~audit.rules.match` (``Match``, ``Capture``),
:mod:`~audit.rules.engine` (``evaluate_ruleset``, ``evaluate_rules``),
:mod:`~audit.rules.testing` (``run_rule_tests`` for the rules' self-tests),
:mod:`~audit.rules.docs` (summaries and the markdown catalogue) and :mod:`~audit.rules.cli`
(``mleaudit rules``). Nothing is imported here, so importing a
submodule stays cheap and free of cycles with :mod:`audit.checks`.
"""

"""Notebook exports with IPython lines, and the figures Dolos 3.5.1 gives for them.

Notebook exports keep IPython's own syntax, which is not Python: line magics (``%matplotlib
inline``), cell magics (``%%time``), shell escapes (``!pip install``, ``! mkdir train``), help
lines (``df?``, ``??np.mean``), captured shell output (``files = !ls``) and the
``get_ipython()`` calls nbconvert writes instead. tree-sitter parses them as syntax errors, and
the tree it recovers (so Dolos's tokens) depends on the tree-sitter runtime: Dolos 3.5.1 runs
the tree-sitter 0.25 runtime (node ``tree-sitter`` 0.25), whose error recovery differs from
0.26's on some of these lines (``! mkdir train`` after ``%matplotlib inline``, magics inside
blocks, at the end of a file without a newline, inside brackets).

Each case puts IPython lines, written one way, into the same ordinary script (:data:`BODY`);
``"plain"`` is the script without them. :data:`DOLOS` holds what Dolos 3.5.1 gives for every
case (``@dodona/dolos-lib`` 3.5.1 with node ``tree-sitter`` 0.25.1, default options, language
python, all texts in one analysis): the number of tokens, the sha256 of the token stream (tokens
joined by single spaces, UTF-8), the number of fingerprints, and the pair figures of the case
against ``"plain"``. ``tests/audit/similarity/test_ipython_parity.py`` checks the engine against
these figures, and against Dolos itself when an install of it is found.
"""

from __future__ import annotations

#: An ordinary notebook export (code cells joined by a blank line), in pieces between which the
#: cases put IPython lines.
BODY = (
    "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n",
    "train = pd.read_csv('../input/train.csv')\ntest = pd.read_csv('../input/test.csv')\n"
    "print(train.shape, test.shape)\n",
    "def clean(frame):\n    frame = frame.copy()\n    frame['Age'] = frame['Age'].fillna(frame['Age'].median())\n"
    "    frame['Fare'] = np.log1p(frame['Fare'].fillna(0))\n    return frame\n",
    "train = clean(train)\ntest = clean(test)\nfeatures = ['Pclass', 'Age', 'Fare', 'SibSp']\n"
    "for column in features:\n    plt.hist(train[column], bins=20)\n    plt.title(column)\n    plt.show()\n",
    "from sklearn.ensemble import RandomForestClassifier\nmodel = RandomForestClassifier(n_estimators=200, "
    "random_state=0)\nmodel.fit(train[features], train['Survived'])\n",
    "submission = pd.DataFrame({'PassengerId': test['PassengerId'], 'Survived': model.predict(test[features])})\n"
    "submission.to_csv('submission.csv', index=False)\n",
)


def _cells(*inserts: str, crlf: bool = False, final_newline: bool = True) -> str:
    """:data:`BODY`'s pieces with ``inserts[i]`` put before piece ``i`` (cells joined by a blank line)."""
    parts = []
    for i, piece in enumerate(BODY):
        insert = inserts[i] if i < len(inserts) else ""
        parts.append(insert + piece)
    tail = inserts[len(BODY)] if len(inserts) > len(BODY) else ""
    text = "\n".join(parts) + tail
    if not final_newline:
        text = text.rstrip("\n")
    return text.replace("\n", "\r\n") if crlf else text


#: Case name to text.
CASES: dict[str, str] = {
    "plain": _cells(),
    # the export of the report: a line magic, then shell escapes with a space after "!"
    "matplotlib_then_mkdir": _cells("", "%matplotlib inline\n\n! mkdir train\n! unzip -q train.zip -d train\n"),
    "line_magics": _cells("%matplotlib inline\n%load_ext autoreload\n%autoreload 2\n", "%time x = 1\n",
                          "", "%timeit -n 10 -r 3 sum(range(100))\n%env CUDA_VISIBLE_DEVICES=0\n%cd ../input\n"),
    "cell_magics": _cells("%%time\n", "", "%%capture out\n", "%%bash\nls -la\necho done\n\n",
                          "%%writefile helper.py\nimport sys\nprint(sys.argv)\n\n"),
    "shell_no_space": _cells("!pip install -q lightgbm\n", "!ls -la ../input | head -n 5\n"),
    "shell_one_space": _cells("! pip install -q lightgbm\n", "! mkdir train\n"),
    "shell_many_spaces": _cells("!   pip   install  xgboost==1.7.6\n", "!  mkdir   -p  train\n"),
    "shell_variables": _cells("", "!echo {train_path} $HOME\n!cp {src} {dst}\n"),
    "shell_captured": _cells("files = !ls ../input\n", "out = %sx ls\n"),
    "help_suffix": _cells("", "", "", "train?\ntrain.head??\n"),
    "help_prefix": _cells("", "", "", "?train\n??np.mean\n"),
    "get_ipython_calls": _cells("get_ipython().run_line_magic('matplotlib', 'inline')\n",
                                "get_ipython().system('mkdir train')\n",
                                "get_ipython().run_cell_magic('time', '', 'f()\\n')\n"),
    "indented_in_loop": _cells("", "", "", "", "for i in range(3):\n    %time f(i)\n    !echo $i\n    y = i\n\n"),
    "indented_in_branches": _cells("", "if True:\n    !pip install foo\nelse:\n    %matplotlib inline\nprint(1)\n\n"),
    "indented_in_def_and_class": _cells(
        "", "", "def f():\n    %matplotlib inline\n    ! mkdir train\n    return 1\n\n"
                "class A:\n    !ls\n    x = 1\n\n"),
    "indented_with_tabs": _cells("", "while x:\n\t!ls\n\t%time g()\n\tbreak\n\n"),
    "indented_help": _cells("", "", "", "for c in features:\n    train[c]?\n    print(c)\n\n"),
    "inside_brackets": _cells("", "x = [1,\n%matplotlib inline\n2]\ny = (\n! mkdir a\n)\n\n"),
    "magic_at_end_no_newline": _cells("", "", "", "", "", "", "\n%matplotlib inline", final_newline=False),
    "shell_at_end_no_newline": _cells("", "", "", "", "", "", "\n! mkdir train", final_newline=False),
    "cell_magic_at_end_no_newline": _cells("", "", "", "", "", "", "\n%%time", final_newline=False),
    "crlf": _cells("%matplotlib inline\n", "! mkdir train\n", "%%time\n", "!pip install foo\n", crlf=True),
    "crlf_shell_at_end_no_newline": _cells("", "", "", "", "", "", "\n! ls", crlf=True, final_newline=False),
    "byte_order_mark": "\ufeff" + _cells("%matplotlib inline\n", "! mkdir train\n"),
    "in_comments": _cells("# %matplotlib inline\n#! mkdir train\n", "%matplotlib inline # inline plots\n!ls # list\n"),
    "lone_percent_and_bang": _cells("%\n!\n", "%%\n"),
    "non_ascii": _cells("%matplotlib inline\n! echo 'données é'\n", "nom = 'é'\n"),
    "many": _cells(*("".join(f"%matplotlib inline\n! mkdir d{i}{j}\n" for j in range(8)) for i in range(6))),
}

#: What Dolos 3.5.1 gives for each case: ``tokens``, ``sha256`` (of the tokens joined by single
#: spaces), ``fingerprints``, and ``pair``: the figures of (case, ``"plain"``) with the case on
#: the left, in Dolos's order ``similarity, totalOverlap, longestFragment, leftCovered,
#: rightCovered, leftTotal, rightTotal`` (``None`` for ``"plain"`` itself).
DOLOS: dict[str, dict] = {
    'plain': {
        "tokens": 780, "fingerprints": 93,
        "sha256": "e2b83c051336386d3173ebc192089543989d592eda9aff436aa6875911260daf",
        "pair": None,
    },
    'matplotlib_then_mkdir': {
        "tokens": 849, "fingerprints": 98,
        "sha256": "5ec70bfb76326f622be4454d81d517c865c51cef7ef46815d1545be66b9ee141",
        "pair": (0.9528795811518325, 182, 87, 91, 91, 98, 93),
    },
    'line_magics': {
        "tokens": 912, "fingerprints": 111,
        "sha256": "1418e3efb7a1cfaf3e98496d863544c869cf80c6dfb1afda6b10857cf7631093",
        "pair": (0.8431372549019608, 172, 53, 86, 86, 111, 93),
    },
    'cell_magics': {
        "tokens": 882, "fingerprints": 105,
        "sha256": "8c69a9cacb1fa44538f150d075ecf1359f4e9cf16145e65b8e29f3b87e832153",
        "pair": (0.8333333333333334, 165, 27, 82, 83, 105, 93),
    },
    'shell_no_space': {
        "tokens": 846, "fingerprints": 97,
        "sha256": "8959e07ce6cd893aa7927809969e254a59dee90e87f801103750fb21a7d38f3a",
        "pair": (0.9368421052631579, 178, 86, 89, 89, 97, 93),
    },
    'shell_one_space': {
        "tokens": 816, "fingerprints": 93,
        "sha256": "9bdd030974125516a1b73b36f53e0e118e0df2f3a766dfcc8a1bd923ef255213",
        "pair": (0.956989247311828, 178, 86, 89, 89, 93, 93),
    },
    'shell_many_spaces': {
        "tokens": 825, "fingerprints": 100,
        "sha256": "c9395463e9730fa17706986196cf01d31d0e6464ab35d634a991f4040c742894",
        "pair": (0.9326424870466321, 180, 87, 90, 90, 100, 93),
    },
    'shell_variables': {
        "tokens": 831, "fingerprints": 98,
        "sha256": "b89680526a6868e24782b660e22064ec429a48d667eddb83f8956ab97b1011da",
        "pair": (0.9528795811518325, 182, 87, 91, 91, 98, 93),
    },
    'shell_captured': {
        "tokens": 825, "fingerprints": 100,
        "sha256": "12af0cd786bc5cd486da7e934a3b5be52215674378dd15111036984358049363",
        "pair": (0.9430051813471503, 182, 87, 91, 91, 100, 93),
    },
    'help_suffix': {
        "tokens": 801, "fingerprints": 96,
        "sha256": "9c83344c763942f8ccdd81d57e41a192e9dcb177c35322826f7cb19ac54cb0f0",
        "pair": (0.9470899470899471, 179, 52, 89, 90, 96, 93),
    },
    'help_prefix': {
        "tokens": 810, "fingerprints": 97,
        "sha256": "1bc2e4894364ba859194f382d512b2c5c3b3d8e8b6a2b7d752d46e29807a90c6",
        "pair": (0.9473684210526315, 180, 53, 90, 90, 97, 93),
    },
    'get_ipython_calls': {
        "tokens": 924, "fingerprints": 107,
        "sha256": "20dbd93124f6f13296b37064df0c497d0896de099d9af06e4bf6079dd97b0690",
        "pair": (0.865, 173, 74, 87, 86, 107, 93),
    },
    'indented_in_loop': {
        "tokens": 852, "fingerprints": 100,
        "sha256": "04307e037601eed08cc742855c6149052892368cfdb1870b679c4ca26940f777",
        "pair": (0.9430051813471503, 182, 63, 91, 91, 100, 93),
    },
    'indented_in_branches': {
        "tokens": 840, "fingerprints": 99,
        "sha256": "4f113a43111dc1a102157d33e9bbc76ede36a81f9bd98e267dad99317bb14302",
        "pair": (0.9270833333333334, 178, 86, 89, 89, 99, 93),
    },
    'indented_in_def_and_class': {
        "tokens": 855, "fingerprints": 100,
        "sha256": "0a3f220bd221f4733e58c1304bd0c52c5ada8046d2ccd5a81acf9a23645637e8",
        "pair": (0.9533678756476683, 184, 74, 92, 92, 100, 93),
    },
    'indented_with_tabs': {
        "tokens": 822, "fingerprints": 99,
        "sha256": "f46828ffb51b80be8164128d199af71e00ffdf72226d88c22d3a0682b85a1a0f",
        "pair": (0.9270833333333334, 178, 86, 89, 89, 99, 93),
    },
    'indented_help': {
        "tokens": 822, "fingerprints": 95,
        "sha256": "92628d88f549b02a3c11d10022337111fc53b7e2f74189871c08f72ac55c79e0",
        "pair": (0.9574468085106383, 180, 53, 90, 90, 95, 93),
    },
    'inside_brackets': {
        "tokens": 831, "fingerprints": 97,
        "sha256": "b1d2bcc17dc918d5b3267f3748cfbdb9b5383bc5571b36a1847e888f50393812",
        "pair": (0.9578947368421052, 182, 86, 91, 91, 97, 93),
    },
    'magic_at_end_no_newline': {
        "tokens": 792, "fingerprints": 96,
        "sha256": "f275366e2f375a6b98f1a6f7ce921b0fb69782ab295a8d7517d884ae6873e7ec",
        "pair": (0.9841269841269841, 186, 93, 93, 93, 96, 93),
    },
    'shell_at_end_no_newline': {
        "tokens": 795, "fingerprints": 96,
        "sha256": "4a9705538f07470ba2ef09e626d1e7eeaa752c7f3863fee9bead7f2461ca6093",
        "pair": (0.9841269841269841, 186, 93, 93, 93, 96, 93),
    },
    'cell_magic_at_end_no_newline': {
        "tokens": 789, "fingerprints": 94,
        "sha256": "5f6d257b023f31b858cd7665dc19165fa51207ec347960b746700bfe8e706689",
        "pair": (0.9946524064171123, 186, 93, 93, 93, 94, 93),
    },
    'crlf': {
        "tokens": 834, "fingerprints": 99,
        "sha256": "61a99f9ab2f13a85129ad97b428036e56f825dd704e594f451a43b92c32a6764",
        "pair": (0.8697916666666666, 167, 52, 83, 84, 99, 93),
    },
    'crlf_shell_at_end_no_newline': {
        "tokens": 792, "fingerprints": 96,
        "sha256": "30109b66d65aefdf69aa379991b7a8eab7e2e5af9f6786113f5c76458a378f62",
        "pair": (0.9841269841269841, 186, 93, 93, 93, 96, 93),
    },
    'byte_order_mark': {
        "tokens": 807, "fingerprints": 94,
        "sha256": "dffe2dfbba798ddb8e5ac4b92fe9e69846df08fd486f3309192ea55acd7a4d73",
        "pair": (0.9518716577540107, 178, 86, 89, 89, 94, 93),
    },
    'in_comments': {
        "tokens": 804, "fingerprints": 95,
        "sha256": "e6e16714a010661226a22dfe92d80da155be15af389066a89722a6eceea37dfb",
        "pair": (0.9574468085106383, 180, 86, 90, 90, 95, 93),
    },
    'lone_percent_and_bang': {
        "tokens": 795, "fingerprints": 96,
        "sha256": "3987d6b412cbf3ec2f391095bd6c744f48470ca9c44d4e40de54735ceb33c0bf",
        "pair": (0.9206349206349206, 174, 86, 87, 87, 96, 93),
    },
    'non_ascii': {
        "tokens": 837, "fingerprints": 99,
        "sha256": "8e1d8e3a9413cb7002570ce7579c0e2656b4949175a87e26188d8310daa5723b",
        "pair": (0.9375, 180, 86, 90, 90, 99, 93),
    },
    'many': {
        "tokens": 2034, "fingerprints": 233,
        "sha256": "1a2cfb12614a30ea3fd25463d24d7a157c0244c0f92bbb5acd375b7aba9f57d3",
        "pair": (0.48466257668711654, 158, 21, 78, 80, 233, 93),
    },
}

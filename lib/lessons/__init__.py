"""The lessons: everything that exists to teach, one folder per notebook, beside the
``parlab`` library they call (which never imports them).

  common/                    what every notebook uses: the lab's figure style and charts
                             (viz), answer boxes and the checkers' sandbox (checkers), the
                             interview-drill bank (drills), the %%ranks magic, the small
                             models not written by the lab (byom)
  l00_collectives/ ...       one folder per notebook, named as its notebook is
  l09_the_whole_answer/

A lesson folder holds its ``experiments`` (pure functions returning data; the tests call
them directly), ``figures`` (plotly), ``widgets`` (thin ipywidgets shells over the two),
``exercises`` (checkers and reference solutions, with their ``hints``) and ``drills``
(interview questions whose answers ``parlab.cost`` computes). ``python -m lessons`` runs
the lessons' demos from a terminal.

``lessons.lang("zh")`` switches what exists in both languages (the drills, the glossary,
09's answers) to Chinese for the session; ``lessons.current_lang()`` reads it
(``common/i18n.py``).
"""

from .common.i18n import current_lang, lang  # noqa: F401  (one switch, for every lesson)

# each notebook's lesson folder, by the notebook's number
FOLDERS = {"00": "l00_collectives", "01": "l01_data_parallel", "02": "l02_tensor_parallel",
           "03": "l03_pipeline_parallel", "04": "l04_expert_parallel",
           "05": "l05_context_parallel", "06": "l06_3d_parallel", "07": "l07_mixed_precision",
           "08": "l08_checkpoints_and_failures", "09": "l09_the_whole_answer"}

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
"""

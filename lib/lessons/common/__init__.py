"""What every lesson uses:

  viz/          the lab's plot style, shared charts, HTML tables and click-to-open notes
  checkers/     how an exercise runs the learner's code (in a child process, on real ranks,
                with a timeout), reads an answer and gives a verdict; the answer box
  drills/       the interview-drill bank: the question type and registry, the scoring rule,
                the terminal quiz and the notebook widget (each lesson's ``drills`` adds
                its templates)
  interactive.py  the %%ranks cell magic: torch.distributed calls typed into a cell, run on
                every rank
  byom.py       models the lab did not design (tied, frozen, unused parameters; a plain MLP
                stack) and the rank workers notebooks 01, 02 and 06 run the parts on
"""

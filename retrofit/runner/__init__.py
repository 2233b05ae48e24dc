"""The sweep: run cases (one fit, every variant), store one result file per unit, aggregate.

`case` runs one host × dataset × seed; `units` names and stores unit results; `config` builds a
`Case` from a Hydra config; `hydra_callbacks` checks a whole sweep before it runs; `aggregate`
writes the CSV, table and plot; `tau_sweep` runs ΔRMSE against the calibration constant c.
"""

"""The message proxy: single Kafka protocol messages of a member held back, withheld, cut or
rewritten, on real brokers (faults/message.py is the fault kind that drives it).

- ``apis``: the APIs a fault may name, their keys and the errors a broker answers them with;
- ``frames``: Kafka's frames read and written with kio's message types;
- ``rules``: what a fault asks of the proxy, decided on each request;
- ``server``: the proxy (``python3 -m faults.message_proxy``) and its control API;
- ``client``: the control API's client, for the harness and the fault.
"""

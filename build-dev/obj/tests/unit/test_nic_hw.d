build-dev/obj/tests/unit/test_nic_hw.o: tests/unit/test_nic_hw.c \
 tests/unit/nic_hwlib.h tests/unit/nic_testlib.h \
 tests/unit/../../sim/cfg.h tests/unit/../../sim/engine.h \
 tests/unit/../../sim/model.h tests/unit/../../sim/cfg.h \
 tests/unit/../../sim/engine.h tests/unit/../../sim/params.h \
 tests/unit/../../sim/nic/nic.h tests/unit/../../sim/nic/../engine.h \
 tests/unit/../../sim/nic/cassini.h tests/unit/../../sim/stats.h
tests/unit/nic_hwlib.h:
tests/unit/nic_testlib.h:
tests/unit/../../sim/cfg.h:
tests/unit/../../sim/engine.h:
tests/unit/../../sim/model.h:
tests/unit/../../sim/cfg.h:
tests/unit/../../sim/engine.h:
tests/unit/../../sim/params.h:
tests/unit/../../sim/nic/nic.h:
tests/unit/../../sim/nic/../engine.h:
tests/unit/../../sim/nic/cassini.h:
tests/unit/../../sim/stats.h:

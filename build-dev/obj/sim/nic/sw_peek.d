build-dev/obj/sim/nic/sw_peek.o: sim/nic/sw_peek.c sim/nic/../util.h \
 sim/nic/sw_impl.h sim/nic/sw.h sim/nic/nic.h sim/nic/../engine.h \
 sim/nic/cassini.h
sim/nic/../util.h:
sim/nic/sw_impl.h:
sim/nic/sw.h:
sim/nic/nic.h:
sim/nic/../engine.h:
sim/nic/cassini.h:

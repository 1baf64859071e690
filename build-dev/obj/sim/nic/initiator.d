build-dev/obj/sim/nic/initiator.o: sim/nic/initiator.c sim/nic/../util.h \
 sim/nic/nic_impl.h sim/nic/../engine.h sim/nic/../fabric/fabric.h \
 sim/nic/../fabric/../engine.h sim/nic/../pool.h sim/nic/../stats.h \
 sim/nic/nic.h sim/nic/cassini.h
sim/nic/../util.h:
sim/nic/nic_impl.h:
sim/nic/../engine.h:
sim/nic/../fabric/fabric.h:
sim/nic/../fabric/../engine.h:
sim/nic/../pool.h:
sim/nic/../stats.h:
sim/nic/nic.h:
sim/nic/cassini.h:

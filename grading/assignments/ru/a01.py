"""Задание 1 по-русски (grading/assignments/a01.py): Service, его EndpointSlices и завершение пода."""
from grading.build_source import Translation

TRANSLATION = Translation(
    text={
        "862be087": "Задание 1: Service и его EndpointSlices",
        "23bd223b": """
Service не знает своих подов. У него есть label selector; контроллер EndpointSlice следит, какие поды подходят под
него и прошли readiness-пробу, и записывает их адреса в объекты EndpointSlice. kube-proxy на каждой ноде читает эти
слайсы. В этом задании вы построите эту цепочку и посмотрите, как она реагирует на смерть пода.

Сначала запустите ячейку настройки. `lab` — ваш кластер; в `checks` лежат проверки, которыми пользуются тесты (их
можно вызывать и самим).""",
        # Exercise 1
        "5a13458e": """
## Упражнение 1: три реплики — три адреса (4 балла)

Напишите манифест, в котором есть
* Deployment `web`: 3 реплики `nginx` (любой тег, например `nginx:1.27`), поды с меткой `app: web`, порт
  контейнера 80 и хук `preStop`, который спит 20 с: `lifecycle: {preStop: {exec: {command: [sleep, "20"]}}}` у
  контейнера (зачем — объясняет упражнение 3);
* Service `web` типа `ClusterIP` с селектором `app: web` на вашем порту (`task.service_port`) с target port 80;
  назовите порт вашим именем порта (`task.port_name`).

Примените его через `lab.apply(...)`, затем дождитесь, пока в слайсах Service появятся три готовых адреса:
`lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)` двигает часы кластера, пока это не выполнится.""",
        "4576740e": """
Вот что печатает `kubectl get endpointslices -l kubernetes.io/service-name=web` (настоящий kubectl, который
говорит с вашим кластером). У имени слайса случайный суффикс, как у имени пода.""",
        # Exercise 2
        "786a07a2": """
## Упражнение 2: прочитайте слайс сами (1 балл)

Запишите в `addresses` список готовых адресов Service `web`, прочитанный из объектов EndpointSlice:
`lab.get("endpointslices", selector="kubernetes.io/service-name=web")` возвращает список слайсов; у каждого есть
`endpoints`, у каждого эндпоинта — `addresses` и `conditions`. Не пользуйтесь здесь `checks`.""",
        # Exercise 3
        "fe38df7f": """
## Упражнение 3: поймайте терминирующий эндпоинт (3 балла)

Удалите один из подов `web` через `lab.delete("pod", name)`. Вызов возвращается, как только API-сервер принял
запрос. Затем kubelet запускает хук `preStop` контейнера; когда хук закончится, среда выполнения посылает сигнал
остановки образа (для nginx это SIGQUIT, его мягкое завершение), и простаивающий nginx сразу выходит. Grace period
(`terminationGracePeriodSeconds`, 30 с) — это лишь срок, после которого процесс убивают. Без хука эндпоинт исчез
бы примерно за секунду — и на настоящем кластере тоже, — и поймать его было бы делом случая; ваш `sleep 20`
держит под, который всё ещё обслуживает запросы, 20 с. Часы стоят, пока вы их не сдвинете.

1. Запишите в `victim_ip` IP пода, который удаляете (`pod["status"]["podIP"]`).
2. Удалите его.
3. Сразу же запишите в `captured` слайсы Service (`lab.get("endpointslices", ...)`).

В `captured` у эндпоинта `victim_ip` должно быть `ready: false, serving: true, terminating: true`: под уходит,
поэтому новые соединения к нему не идут, пока есть другие готовые эндпоинты, но он всё ещё отвечает на
readiness-пробу (и получал бы соединения, если бы готовых эндпоинтов не осталось: kube-proxy тогда откатывается на
serving-эндпоинты, которые уже завершаются).""",
        # Exercise 4
        "895b378e": """
## Упражнение 4: дайте всему улечься (3 балла)

ReplicaSet Deployment'а уже запустил под на замену, с новым IP. Дождитесь, пока адрес удалённого пода уйдёт из
слайса и снова будут готовы три адреса. Сохраните в `settle_seconds` секунды времени кластера, которые заняло
ожидание (то, что возвращает `lab.wait`). Как это число соотносится со sleep в `preStop` и с grace period в 30 с?""",
    },
    code={
        "f\"the Service's port is {port['port']} named {port.get('name')!r}; your task asks for port \"":
            "f\"у Service порт {port['port']} с именем {port.get('name')!r}; ваше задание требует порт \"",
        'f"{task.service_port} named {task.port_name!r} (see the task card)"':
            'f"{task.service_port} с именем {task.port_name!r} (см. карточку задания)"',
        '"expected the three ready addresses"': '"ожидались три готовых адреса"',
        '"a pod held by its preStop hook still passes readiness: its endpoint should be serving"':
            '"под, которого держит preStop-хук, всё ещё проходит readiness-пробу: его эндпоинт должен быть serving"',
        "# The captured object must come from the cluster, not be written by hand.":
            "# Сохранённый объект должен прийти из кластера, а не быть написан вручную.",
        'f"captured {sorted(got)} are not the slices of web ({sorted(names)})"':
            'f"в captured {sorted(got)} — не слайсы web ({sorted(names)})"',
        '"settle_seconds should be the number lab.wait returned"':
            '"в settle_seconds должно быть число, которое вернул lab.wait"',
        "# The pod leaves when its preStop hook ends and nginx quits, not when the 30 s grace period would run out.":
            "# Под уходит, когда кончается его preStop-хук и nginx завершается, а не когда истёк бы grace period в 30 с.",
    },
)
